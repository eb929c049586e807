"""Deprecated path: moved to :mod:`edgebench.formulations.placement.deadline` (issue 45); this module re-exports its public
names and works for one release."""

import warnings

from edgebench.formulations.placement import deadline as _new

globals().update({k: v for k, v in vars(_new).items() if not k.startswith("_")})
warnings.warn("edgebench.formulations.placement_deadline is deprecated: import edgebench.formulations.placement.deadline", DeprecationWarning, stacklevel=2)
