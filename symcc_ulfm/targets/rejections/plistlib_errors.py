"""``plistlib`` (3.11): ``load``/``loads`` reject an input with

* ``InvalidFileException`` -- documented ("The parser for the binary format raises
  InvalidFileException when the file cannot be parsed"), and raised by ``load`` when no format
  matches the header and for XML entity declarations (``plistlib.py``);
* ``xml.parsers.expat.ExpatError`` -- documented ("XML data for the FMT_XML format is parsed
  using the Expat parser from xml.parsers.expat - see its documentation for possible exceptions
  on ill-formed XML");
* ``ValueError`` -- the XML parser's "unexpected element", "unexpected key" and "missing value
  for key" (``_PlistParser``); ``InvalidFileException`` is a ``ValueError`` subclass.

An ``AttributeError`` of a malformed ``<date>`` or any other type is not a rejection.
"""

from . import register

register("plistlib", ("load", "loads"), ("plistlib.InvalidFileException", "xml.parsers.expat.ExpatError",
                                         "builtins.ValueError"))
