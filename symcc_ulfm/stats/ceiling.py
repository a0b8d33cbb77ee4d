"""Recommended worker ceiling = min(USL threshold on effective throughput, coverage threshold,
physical core limit) (DESIGN.md §10).

A decision rule, not a law. A component is used only when it is a number backed by the measured
range: a refused fit, a missing threshold or an ``extrapolated`` one is recorded with its reason
and left out, and the result names the components the ceiling was taken over (``used``). With no
usable component there is no ceiling (``refused: ceiling_error=no usable component``).
"""

from __future__ import annotations

COMPONENTS = ("usl_threshold", "coverage_threshold", "physical_limit")
NO_CEILING = "ceiling_error=no usable component"


def _threshold_component(fit: dict | None, name: str) -> dict:
    if fit is None:
        return {"value": None, "refused": f"{name}_error=not fitted"}
    if fit.get("refused"):
        return {"value": None, "refused": fit["refused"], "detail": fit.get("detail")}
    if fit.get("threshold") is None:
        return {"value": None, "refused": f"{name}_error=no threshold", "detail": fit.get("threshold_note")}
    if fit.get("extrapolated"):
        return {
            "value": fit["threshold"],
            "refused": f"{name}_error=threshold extrapolated beyond measured range",
            "detail": fit.get("extrapolation"),
        }
    return {"value": fit["threshold"], "refused": None}


def _physical_component(cores: int | None) -> dict:
    if isinstance(cores, bool) or not isinstance(cores, int) or cores < 1:
        return {"value": None, "refused": "physical_limit_error=cores not recorded", "detail": repr(cores)}
    return {"value": cores, "refused": None}


def recommend_ceiling(usl_fit: dict | None, coverage_fit: dict | None, cores: int | None) -> dict:
    """``{ceiling, used, partial, components, refusals, refused}`` from the two fits and the core count."""
    components = {
        "usl_threshold": _threshold_component(usl_fit, "usl_threshold"),
        "coverage_threshold": _threshold_component(coverage_fit, "coverage_threshold"),
        "physical_limit": _physical_component(cores),
    }
    for component in components.values():
        component["used"] = component["refused"] is None
    used = [name for name in COMPONENTS if components[name]["used"]]
    refusals = [components[name]["refused"] for name in COMPONENTS if not components[name]["used"]]
    ceiling = min(components[name]["value"] for name in used) if used else None
    return {
        "ceiling": ceiling,
        "used": used,
        "partial": len(used) < len(COMPONENTS),
        "components": components,
        "refusals": refusals,
        "refused": None if used else NO_CEILING,
    }
