"""The memory budget of the anytime bound searches (edgebench.formulations.memory, issue 46): it
trips on the RLIMIT_AS in force (what the runner's ``--memory-limit`` sets) and on a
``memory_mb`` budget, each at FRACTION of the limit, and not below."""

from __future__ import annotations

import subprocess
import sys

from edgebench.formulations import memory as M

CHILD = """
import resource
from edgebench.formulations import memory as M
used = M.address_space_mb()
# a limit the address space is already past 80 % of (20 % headroom for this little script)
limit = int(used / 0.85 * 2**20)
resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
b = M.MemoryBudget.in_force()
print(b.exceeded())
"""


def test_the_address_space_limit_in_force_trips_the_budget():
    """In a subprocess under an RLIMIT_AS the process is already past 80 % of, the budget says
    so, naming the limit; without one (this process) it does not trip."""
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    line = out.stdout.strip()
    assert line.startswith("stopped on memory: address space ") and line.endswith("limit (RLIMIT_AS)"), line


def test_a_memory_mb_budget_trips_at_its_fraction_only():
    used = M.address_space_mb()
    assert used is not None and used > 0
    assert M.MemoryBudget.in_force(memory_mb=used * 2).exceeded() is None  # at 50 %
    why = M.MemoryBudget.in_force(memory_mb=used).exceeded()  # at 100 %
    assert why is not None and why.endswith("limit (memory_mb)") and f"{M.FRACTION:.0%}" in why
    assert M.MemoryBudget().exceeded() is None  # no limit: never
