"""Deprecated path: moved to :mod:`edgebench.formulations.placement.search.cglns` (issue 45); this module re-exports its public
names and works for one release."""

import warnings

from edgebench.formulations.placement.search import cglns as _new

globals().update({k: v for k, v in vars(_new).items() if not k.startswith("_")})
warnings.warn("edgebench.formulations.placement_cglns is deprecated: import edgebench.formulations.placement.search.cglns", DeprecationWarning, stacklevel=2)
