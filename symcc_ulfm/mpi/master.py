"""A master rank's generation: the master driver (``master.MasterDriver``) over MPI."""

from __future__ import annotations

from ..runtime.master_driver import MasterDriver
from .channels import MpiTransport
from .context import RankContext


def run_master(ctx: RankContext) -> None:
    driver = MasterDriver(ctx, MpiTransport(ctx))
    try:
        driver.prepare()
        driver.run()
    finally:
        driver.close()
