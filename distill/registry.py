"""Name → factory, for the things a setting picks by name (chat providers, embedders).

A new provider is one decorated factory, not another branch in an if-ladder::

    PROVIDERS = Registry("DISTILL_LLM")

    @PROVIDERS.register("gemini")
    def _gemini(settings):
        from .gemini import GeminiProvider  # heavy clients load only when chosen
        return GeminiProvider(settings)

An unknown name is a :class:`~distill.errors.ConfigError` naming the setting and every known name.
"""

from __future__ import annotations

from typing import Any, Callable, Generic, TypeVar

from .errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, setting: str):
        self.setting = setting  # the setting whose value is looked up here, for the error
        self._factories: dict[str, Callable[..., T]] = {}

    def register(self, name: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
        def add(factory: Callable[..., T]) -> Callable[..., T]:
            self._factories[name] = factory
            return factory

        return add

    def __contains__(self, name: object) -> bool:
        return name in self._factories

    def names(self) -> list[str]:
        return list(self._factories)

    def make(self, name: str, *args: Any) -> T:
        if name not in self._factories:
            raise self.unknown(name)
        return self._factories[name](*args)

    def unknown(self, name: str, *also: str) -> ConfigError:
        """The error for a name nobody registered; ``also`` adds names resolved elsewhere."""
        known = ", ".join([*also, *self._factories])
        return ConfigError(f"unknown {self.setting}={name!r}: use one of {known}")
