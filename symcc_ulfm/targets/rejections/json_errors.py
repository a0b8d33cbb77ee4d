"""``json`` (3.11): ``loads``/``load`` reject an input with ``json.JSONDecodeError``
(documented: "If the data being deserialized is not a valid JSON document, a JSONDecodeError will
be raised"; also the "Unexpected UTF-8 BOM" of a ``str``), and bytes in none of UTF-8, UTF-16 or
UTF-32 (documented as the accepted encodings) with ``UnicodeDecodeError`` from
``s.decode(detect_encoding(s), 'surrogatepass')`` in ``json/__init__.py``."""

from . import register

register("json", ("load", "loads"), ("json.JSONDecodeError", "builtins.UnicodeDecodeError"))
