"""Training progress: a tqdm bar on a terminal, periodic log lines otherwise."""

from __future__ import annotations

import logging
import sys
import time

from tqdm import tqdm

log = logging.getLogger("nmt.train")


class TrainingProgress:
    """Shows loss, target tokens/s, the ETA of the time budget and the time to the next
    dev evaluation.

    Args:
        budget: wall-clock budget in seconds (0 = none, then no ETA).
        log_every: steps between log lines when stderr is not a terminal.
        eval_every: steps between dev evaluations (0 = none, then no countdown).
    """

    def __init__(self, budget: float, log_every: int, eval_every: int = 0):
        self.budget, self.log_every, self.eval_every = budget, log_every, eval_every
        self.started = time.time()
        self.window: list[tuple[float, int]] = []
        self.bar = tqdm(total=int(budget) or None, unit="s", dynamic_ncols=True,
                        disable=not sys.stderr.isatty())

    def tokens_per_second(self) -> float:
        if len(self.window) < 2:
            return 0.0
        seconds = self.window[-1][0] - self.window[0][0]
        return sum(n for _, n in self.window[1:]) / max(seconds, 1e-9)

    def seconds_to_evaluation(self, step: int) -> float | None:
        """The steps left to the next evaluation at the recent seconds per step."""
        if not self.eval_every or len(self.window) < 2:
            return None
        per_step = (self.window[-1][0] - self.window[0][0]) / (len(self.window) - 1)
        return (self.eval_every - step % self.eval_every) * per_step

    def update(self, step: int, loss: float, tokens: int, lr: float, epoch: int) -> None:
        now = time.time()
        self.window = (self.window + [(now, tokens)])[-50:]
        speed = self.tokens_per_second()
        elapsed = now - self.started
        to_eval = self.seconds_to_evaluation(step)
        if self.bar.disable:
            if step % self.log_every == 0:
                eta = f" eta {max(self.budget - elapsed, 0) / 60:.1f}m" if self.budget else ""
                dev = f", next dev evaluation in {to_eval / 60:.1f}m" if to_eval else ""
                log.info("step %d epoch %d loss %.3f lr %.2e %.0f tgt tok/s%s%s", step, epoch,
                         loss, lr, speed, eta, dev)
            return
        self.bar.n = int(elapsed)
        self.bar.set_postfix(step=step, epoch=epoch, loss=f"{loss:.3f}", tok_s=f"{speed:.0f}",
                             **({"dev_in": f"{to_eval / 60:.1f}m"} if to_eval else {}))

    def close(self) -> None:
        self.bar.close()
