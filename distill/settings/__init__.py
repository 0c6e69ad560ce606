"""Settings: one precedence implementation (:mod:`.core`, standard library only), from which
the full model (:class:`distill.config.Settings`) and the hook's slice (:mod:`.hook`) are built.

``from distill.settings import Settings, load_settings`` works too; importing this package
itself stays cheap (the model loads only when ``Settings`` is asked for).
"""


def __getattr__(name: str):
    if name in ("Settings", "load_settings", "SourceRoot", "DedupThresholds"):
        from .. import config

        return getattr(config, name)
    raise AttributeError(name)
