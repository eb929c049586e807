"""Deprecated path: moved to :mod:`edgebench.formulations.placement.search.lagrange_list` (issue 45); this module re-exports its public
names and works for one release."""

import warnings

from edgebench.formulations.placement.search import lagrange_list as _new

globals().update({k: v for k, v in vars(_new).items() if not k.startswith("_")})
warnings.warn("edgebench.formulations.placement_lagrange_list is deprecated: import edgebench.formulations.placement.search.lagrange_list", DeprecationWarning, stacklevel=2)
