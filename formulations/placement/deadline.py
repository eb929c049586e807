"""The placement sub-package's name for the shared deadline object: :class:`Deadline`,
:class:`Expired` and :data:`NEVER` live in :mod:`edgebench.formulations.deadline` (one home
for every family since issue 43 item 4, used by the offloading models too) and are re-exported
here, so the placement modules and their callers keep importing
``edgebench.formulations.placement.deadline``."""

from edgebench.formulations.deadline import NEVER, Deadline, Expired

__all__ = ["Deadline", "Expired", "NEVER"]
