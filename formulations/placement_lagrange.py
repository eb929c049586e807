"""Deprecated path: moved to :mod:`edgebench.formulations.placement.bounds.lagrange` (issue 45); this module re-exports its public
names and works for one release."""

import warnings

from edgebench.formulations.placement.bounds import lagrange as _new

globals().update({k: v for k, v in vars(_new).items() if not k.startswith("_")})
warnings.warn("edgebench.formulations.placement_lagrange is deprecated: import edgebench.formulations.placement.bounds.lagrange", DeprecationWarning, stacklevel=2)
