"""Deprecated path: moved to :mod:`edgebench.formulations.placement.bounds.ladder` (issue 45); this module re-exports its public
names and works for one release."""

import warnings

from edgebench.formulations.placement.bounds import ladder as _new

globals().update({k: v for k, v in vars(_new).items() if not k.startswith("_")})
warnings.warn("edgebench.formulations.placement_bound is deprecated: import edgebench.formulations.placement.bounds.ladder", DeprecationWarning, stacklevel=2)
