"""The study commands: ``matrix`` and ``analyze`` (scaling studies), ``compare`` (comparison studies),
``model`` (scaling models and intervals on published numbers)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..errors import ConfigError
from .option_values import emit


def cmd_matrix(args: argparse.Namespace) -> int:
    from ..experiment.matrix import run_matrix

    report = run_matrix(Path(args.protocol), Path(args.out), resume=args.resume)
    print(json.dumps(report, sort_keys=True) if args.json else f"matrix: {report['summary']}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from ..compare.runner import run_study

    report = run_study(Path(args.protocol), Path(args.out), args.harnesses, resume=args.resume,
                       parallel=args.parallel, slurm_steps=args.slurm_steps)
    print(json.dumps(report, sort_keys=True) if args.json else f"compare: {report['summary']}")
    return 0


def cmd_analyze(args: argparse.Namespace) -> int:
    from ..experiment.analysis import analyze

    result = analyze(Path(args.dir))
    print(json.dumps(result, sort_keys=True) if args.json else f"analysis written under {args.dir}/analysis")
    return 0


def _floats(field: str, text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(field, f"{text!r} is not a comma-separated list of numbers") from None


def cmd_model(args: argparse.Namespace) -> int:
    if args.model == "usl":
        from ..stats.usl import model_usl

        result = model_usl(_floats("--workers", args.workers), _floats("--throughput", args.throughput), gain=args.gain)
        text = (f"USL: gamma={result['gamma']:.6g} sigma={result['sigma']:.6g} kappa={result['kappa']:.6g} "
                f"R2={result['r2']:.4f} threshold={result['threshold']}")
    else:
        from ..stats.intervals import model_wilson

        result = model_wilson(args.failures, args.trials)
        text = f"Wilson 95%: [{100 * result['low']:.2f}%, {100 * result['high']:.2f}%]"
    emit(args, result, text)
    return 0
