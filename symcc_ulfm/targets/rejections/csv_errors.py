"""``csv`` (3.11): ``csv.Error`` -- documented: "Raised by any of the functions when an error is
detected" (a reader given lines that are not strings, an unterminated quote in strict mode,
a field larger than ``field_size_limit``)."""

from . import register

register("csv", ("*",), ("csv.Error",))
