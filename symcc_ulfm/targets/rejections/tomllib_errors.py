"""``tomllib`` (3.11): ``loads``/``load`` raise ``tomllib.TOMLDecodeError`` for an invalid TOML
document (documented); ``load`` reads bytes and decodes them as UTF-8 first
(``fp.read().decode()`` in ``tomllib/_parser.py``): ``UnicodeDecodeError``."""

from . import register

register("tomllib", ("loads",), ("tomllib.TOMLDecodeError",))
register("tomllib", ("load",), ("tomllib.TOMLDecodeError", "builtins.UnicodeDecodeError"))
