import math
import sys

import numpy as np
import pytest

from bench.support.memory import peak_rss_mb, rss_mb


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")
def test_resident_memory_grows_with_a_touched_allocation_and_peak_follows():
    before = rss_mb()
    block = np.ones(64 * 2**20 // 8)  # 64 MiB, every page written
    after = rss_mb()
    assert 48 <= after - before <= 80, (before, after)
    assert peak_rss_mb() >= after - 1  # the peak is never below the current size
    del block


def test_a_process_that_does_not_exist_has_no_memory():
    assert math.isnan(rss_mb(2**31 - 1))
