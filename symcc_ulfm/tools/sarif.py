"""``symcc-ulfm sarif DIR OUT.sarif``: the unique findings of a state, run or ``explore --out``
directory as a SARIF 2.1.0 log (OASIS Static Analysis Results Interchange Format), which code
scanning services and IDE viewers read.

One rule per unique finding (``kind/id``: a finding *is* a signature, so each deduplicated
signature is its own rule), one result per rule: its message is the kind, signature and detail;
its location the innermost target frame the signature names (``file:function:line`` of a Python
traceback or of the stack a dead child printed; the file as the signature spells it, its base
name), when it names one; the input is an artifact (the path of its object under the source,
its SHA-256 and length) attached to the result, the minimised input too when ``minimize`` made
one; the measured reproduction rate of the last ``replay`` of it (``triage/records``) is in the
result's properties. ``OUT`` must not exist, and must not be inside a sealed run directory.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from .. import __version__
from ..core.modes import FileModes
from ..errors import ConfigError
from ..store.atomic import write_new
from .sources import Found, Source, StateSource, open_source

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LOCATION = re.compile(r" at ([^ :]+):([^ :]+):(\d+)(?: |$)")
_LEVEL = {"crash": "error", "oom": "error", "protocol": "error", "hang": "warning", "exception": "warning"}


def _object_path(source: Source, sha256: str) -> str:
    if isinstance(source, StateSource):
        return os.path.relpath(source.state.corpus / "objects" / sha256, source.root)
    return sha256


def _location(signature: str) -> list[dict]:
    match = _LOCATION.search(signature)
    if match is None:
        return []
    return [{"physicalLocation": {"artifactLocation": {"uri": match[1]}, "region": {"startLine": int(match[3])}},
             "logicalLocations": [{"fullyQualifiedName": match[2], "kind": "function"}]}]


def build_log(source: Source) -> dict:
    found: list[Found] = source.findings()
    records = source.triage().read_records()
    artifacts: list[dict] = []
    rules, results = [], []

    def artifact(uri: str, sha256: str, length: int, role: str) -> int:
        artifacts.append({"location": {"uri": uri, "uriBaseId": "SOURCE"}, "hashes": {"sha-256": sha256},
                          "length": length, "roles": [role]})
        return len(artifacts) - 1

    for index, item in enumerate(found):
        rule_id = f"{item.kind}/{item.id}"
        rules.append({"id": rule_id, "name": item.kind, "shortDescription": {"text": item.signature},
                      "defaultConfiguration": {"level": _LEVEL.get(item.kind, "warning")},
                      "properties": {"kind": item.kind}})
        data = source.read_input(item.input_sha256)
        attachments = [{"artifactLocation": {"uri": _object_path(source, item.input_sha256), "uriBaseId": "SOURCE",
                                             "index": artifact(_object_path(source, item.input_sha256),
                                                               item.input_sha256, len(data), "analysisTarget")},
                        "description": {"text": "the input that produced it first"}}]
        properties: dict = {"input_sha256": item.input_sha256, "hits": item.hits, "finding_id": item.id}
        minimized = records.get(("minimize", item.id))
        if minimized and minimized.get("signature") == item.signature:
            sha256 = str(minimized["minimized_sha256"])
            uri = os.path.relpath(source.triage().objects / sha256, source.root)
            attachments.append({"artifactLocation": {"uri": uri, "uriBaseId": "SOURCE",
                                                     "index": artifact(uri, sha256, int(minimized["minimized_size"]),
                                                                       "attachment")},
                                "description": {"text": "the input minimised (symcc-ulfm minimize)"}})
            properties["minimized_sha256"] = sha256
        replayed = records.get(("replay", item.id))
        if replayed and replayed.get("signature") == item.signature and replayed.get("reproduction"):
            properties["reproduction"] = replayed["reproduction"]
        text = f"{item.kind}: {item.signature}" + (f" ({item.detail})" if item.detail else "")
        results.append({"ruleId": rule_id, "ruleIndex": index, "level": _LEVEL.get(item.kind, "warning"),
                        "message": {"text": text}, "locations": _location(item.signature),
                        "partialFingerprints": {"symccUlfmFinding/v1": item.id},
                        "attachments": attachments, "properties": properties})
    run = {"tool": {"driver": {"name": "symcc-ulfm", "version": __version__, "rules": rules}},
           "originalUriBaseIds": {"SOURCE": {"uri": Path(os.path.abspath(source.root)).as_uri() + "/"}},
           "artifacts": artifacts, "results": results,
           "properties": {"source": source.kind, "target": source.run.target, "executor": source.run.executor}}
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


def sarif(path: str | Path, out: str | Path, modes: FileModes) -> dict:
    source = open_source(path, modes)
    out = Path(out)
    target = Path(os.path.realpath(out.parent)) / out.name
    if source.sealed is not None and Path(os.path.realpath(source.sealed)) in target.parents:
        raise ConfigError("OUT", f"{out} is inside the sealed run {source.sealed}, which is never modified")
    if not out.parent.is_dir():
        raise ConfigError("OUT", f"{out.parent} is not a directory")
    log = build_log(source)
    if not write_new(out, (json.dumps(log, indent=1, sort_keys=True) + "\n").encode(), 0o644):
        raise ConfigError("OUT", f"{out} exists; sarif writes a new file and overwrites nothing")
    return {"out": str(out), "results": len(log["runs"][0]["results"]), "source": source.kind}

