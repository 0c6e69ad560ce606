// How memory-lancedb-pro reads a row's lifecycle, re-stated for the interop tests from its
// src/smart-metadata.ts (v1.1.0-beta.10): parseSmartMetadata's normalisation of the lifecycle
// keys and isMemoryActiveAt. Not the plugin's code: tests/test_lifecycle_interop.py checks this
// re-statement against the plugin's own functions whenever a copy of its source is at hand.

function clamp01(value, fallback) {
  const n = typeof value === "number" ? value : Number(value);
  if (!Number.isFinite(n)) return fallback;
  return Math.min(1, Math.max(0, n));
}

function clampCount(value, fallback = 0) {
  const n = typeof value === "number" ? value : Number(value);
  if (!Number.isFinite(n) || n < 0) return fallback;
  return Math.floor(n);
}

function normalizeTimestamp(value, fallback) {
  const n = typeof value === "number" ? value : Number(value);
  if (!Number.isFinite(n) || n <= 0) return fallback;
  return Math.floor(n);
}

function normalizeOptionalTimestamp(value) {
  const n = typeof value === "number" ? value : Number(value);
  if (!Number.isFinite(n) || n <= 0) return undefined;
  return Math.floor(n);
}

const STATES = ["pending", "confirmed", "archived"];
const TIERS = ["core", "working", "peripheral"];

export function parseLifecycle(rawMetadata, entry = {}) {
  let parsed = {};
  if (rawMetadata) {
    try {
      const obj = JSON.parse(rawMetadata);
      if (obj && typeof obj === "object") parsed = obj;
    } catch {
      parsed = {};
    }
  }
  const timestamp = typeof entry.timestamp === "number" && Number.isFinite(entry.timestamp) ? entry.timestamp : Date.now();
  const validFrom = normalizeTimestamp(parsed.valid_from, timestamp);
  const invalidatedAt = normalizeOptionalTimestamp(parsed.invalidated_at);
  const str = (v) => (typeof v === "string" && v.trim() ? v.trim() : undefined);
  return {
    valid_from: validFrom,
    invalidated_at: invalidatedAt && invalidatedAt >= validFrom ? invalidatedAt : undefined,
    state: STATES.includes(parsed.state) ? parsed.state : "confirmed",
    tier: TIERS.includes(parsed.tier) ? parsed.tier : "working",
    confidence: clamp01(parsed.confidence, 0.7),
    access_count: clampCount(parsed.access_count, 0),
    last_accessed_at: clampCount(parsed.last_accessed_at, timestamp),
    supersedes: str(parsed.supersedes),
    superseded_by: str(parsed.superseded_by),
  };
}

export function isMemoryActiveAt(metadata, at = Date.now()) {
  if (metadata.valid_from > at) return false;
  return !metadata.invalidated_at || metadata.invalidated_at > at;
}
