"""TapFinger: the multi-agent placement policy of the TapFinger paper (seed 001, SPEC.md Family A)
over the PettingZoo placement environment (:mod:`edgebench.learned.envs.placement`).

Pieces (all in this file; the training loop is :mod:`edgebench.learned.train_tapfinger`):

* :func:`build_graph` turns the agents' observation vectors (plus the pending task ids) into
  one heterogeneous graph per state: node types ``run`` (running tasks: allocation, one-hot
  type, elapsed time, progress), ``pend`` (pending slots: minimum, one-hot type, waited, ...,
  dummy flag), ``clus`` (free resources, capacity, queue length, ...) and ``short`` (one
  shortcut node linked to every cluster); edges running task <-> its cluster, pending slot <->
  the cluster whose pending set holds it, pending slot <-> the other clusters' slots holding
  the same task, cluster <-> shortcut.
* :class:`TapFingerNet`: a heterogeneous graph attention encoder (``layers`` x ``heads`` x
  ``hidden``; ``conv="fused"``, the default: :func:`hetero_attention_layer`, a PyTorch Geometric
  ``MessagePassing`` layer with HGT-style attention over all node and edge types in one pass;
  ``"hgt"``: PyG's ``HGTConv``; ``"gat"``: ``HeteroConv`` of one ``GATConv`` per edge type, the
  first checkpoints), or for the "nograph" ablation an MLP over each agent's concatenated
  features; the pointer actor (a
  transformer encoder over the agent's pending embeddings, then u_j = v^T tanh(W1 h_j +
  W2 mean(h)), dummies and unplaceable slots masked, plus a learned void entry); the
  allocation head (MLP over the chosen slot's and its cluster's embeddings, a distribution
  over the (cpu, gpu) grid with the env's mask applied); the critic (MLP over the flattened
  pending embeddings of all agents, one value per agent). With ``ModelConfig.inputs="generic"``
  (issue 42 item 4) the type one-hot is replaced by type-free task features from the
  performance model, the allocation head scores each cell of any cluster's grid with one shared
  MLP from per-cell features, and the critic reads any number of clusters
  (:mod:`edgebench.learned.tapfinger_features`, docs/tapfinger.md "Type-generic inputs").
* :func:`act`: one joint decision: every agent samples (or takes the argmax of) its pointer
  distribution; conflicts are resolved by Bayes' rule, Pr(n | j) ~ Pr(j | n) Pr(n) with Pr(n)
  proportional to the copies of j that fit cluster n at its minimum (argmax wins, the losers
  take the void action); the winners then choose their allocation.
* :func:`run_episode` / the registered solvers ``tapfinger``, ``tapfinger-nograph`` and
  ``tapfinger-nopointer`` (kind "learned") that load a shipped checkpoint and play an
  instance greedily on CPU. See ``docs/tapfinger.md``.

torch and torch_geometric are imported inside functions (the registry imports this module).
"""

from __future__ import annotations

import copy
import functools
import math
import os
import time
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import numpy as np

from edgebench.errors import InputError
from edgebench.instances.model import Instance
from edgebench.learned import checkpoint
from edgebench.learned.acting import TIE_TOL, one_torch_thread, pick_max
from edgebench.learned.provenance import sha256_file
from edgebench.learned.sampling import best_of
from edgebench.learned.tapfinger_features import CELL_FEATURE_SETS, CROSS_FEATURES, PLAN_FEATURES, TASK_FEATURES
from edgebench.learned.tapfinger_generic import grid_maps, type_view
from edgebench.referee import evaluate
from edgebench.registry import Result, make_result, register

__all__ = ["ModelConfig", "EnvLayout", "build_graph", "make_model", "act", "act_batch", "void_allowed", "run_episode", "load_checkpoint",
           "save_checkpoint", "CHECKPOINT_DIR", "nearest_checkpoint", "SOLVERS", "masks_from_obs", "graph_arrays", "flat_graph",
           "hetero_attention_layer", "EDGE_TYPES", "NODE_TYPES", "resolve_device", "make_deterministic", "pick_max",
           "acting_model", "TIE_TOL", "bind_layout", "generic_layout", "winner_cells",
           "decision_records", "referee_value", "best_of_samples", "sample_seed"]

CHECKPOINT_DIR = Path(__file__).resolve().parent / "checkpoints"
CHECKPOINT_FORMAT = "edgebench-tapfinger-v1"
#: bounds of a checkpoint's ModelConfig integers (other integers: 0..checkpoint.MAX_CONFIG_INT)
CONFIG_BOUNDS = {"hidden": (1, 4096), "layers": (0, 64), "heads": (1, 64), "pointer_layers": (0, 64)}
N_CLUSTER = 7  # len(CLUSTER_FEATURES)
N_PEND = 6  # len(PENDING_FEATURES)
N_RUN = 5  # len(RUNNING_FEATURES)
#: edge types of the state graph (both directions of each relation)
EDGE_TYPES = [("run", "on", "clus"), ("clus", "hosts", "run"), ("pend", "in", "clus"), ("clus", "holds", "pend"),
              ("pend", "same", "pend"), ("clus", "up", "short"), ("short", "down", "clus")]
#: logit of masked actions (finite, so that entropies and their gradients stay finite)
NEG = -1e9


@dataclass
class ModelConfig:
    """Architecture (the paper: 6 layers, 4 heads, hidden 256; the shipped checkpoints are smaller)."""

    hidden: int = 64
    layers: int = 2
    heads: int = 4
    pointer_layers: int = 2
    encoder: str = "graph"  # "graph" or "mlp" (the no-graph ablation)
    pointer: str = "pointer"  # "pointer" or "random" (the no-pointer ablation)
    #: when the pointer's void entry is allowed (see :func:`void_allowed`): "system" or "cluster"
    void_rule: str = "system"
    #: graph layer: "fused" (:func:`hetero_attention_layer`, one pass over all types), "hgt" (PyG's
    #: HGTConv) or "gat" (HeteroConv of one GATConv per edge type, the first checkpoints)
    conv: str = "fused"
    #: task inputs: "onehot" (a one-hot of the training preset's task types, an allocation head
    #: sized to its grid: the shipped checkpoints) or "generic" (type-free task features from the
    #: performance model, a per-cell allocation head over any cluster's grid, a critic of any
    #: cluster count: one network plays every placement instance; issue 42 item 4,
    #: :mod:`edgebench.learned.tapfinger_features`)
    inputs: Literal["onehot", "generic"] = "onehot"
    #: generic inputs' cell features of the allocation head (:data:`tapfinger_features.CELL_FEATURE_SETS`):
    #: "v1" (the six absolute features; every checkpoint before session 15) or "v2" (v1 plus each
    #: cell relative to the best run time and the cheapest best-time cell among the allowed cells,
    #: a Pareto flag and its share of the free resources); one-hot models: "v1" (unread)
    cell_features: Literal["v1", "v2"] = "v1"


@dataclass
class EnvLayout:
    """What fixes the tensor shapes: clusters' capacities, pending window, running rows, task
    types (read from a PlacementParallelEnv; stored in checkpoints)."""

    caps: list[tuple[int, int]]
    pending_size: int
    max_running: int
    type_names: list[str]
    max_cpu: int = field(default=0)
    max_gpu: int = field(default=0)
    #: "onehot" or "generic" (:attr:`ModelConfig.inputs`; a generic layout has no type names and
    #: is rebuilt from each instance it plays: :func:`generic_layout`)
    inputs: Literal["onehot", "generic"] = "onehot"
    #: width of the cross-cluster block at the end of each pending row (generic inputs with
    #: ``cross_features``: len(CROSS_FEATURES); 0: off, every checkpoint before session 24)
    cross: int = 0
    #: width of the plan block after it (generic inputs with ``plan_features``: len(PLAN_FEATURES);
    #: 0: off, every checkpoint before session 25)
    plan: int = 0

    def __post_init__(self) -> None:
        for name, width in (("cross", len(CROSS_FEATURES)), ("plan", len(PLAN_FEATURES))):
            v = getattr(self, name)
            if type(v) is not int or v not in (0, width) or (v and self.inputs != "generic"):
                raise InputError(f"{name} must be 0 or {width} (generic inputs only), got {v!r}", field=name)
        self.caps = [tuple(int(v) for v in c) for c in self.caps]
        self.max_cpu = self.max_cpu or max(c for c, _ in self.caps)
        self.max_gpu = self.max_gpu or max(g for _, g in self.caps)

    @classmethod
    def of_env(cls, env, *, max_cpu: int = 0, max_gpu: int = 0) -> "EnvLayout":
        generic = getattr(env, "task_inputs", "onehot") == "generic"
        return cls(list(env._caps), env.pending_size, env.max_running, [] if generic else list(env.type_names),
                   max_cpu, max_gpu, "generic" if generic else "onehot", int(getattr(env, "cross_width", 0)),
                   int(getattr(env, "plan_width", 0)))

    @property
    def n(self) -> int:
        return len(self.caps)

    @property
    def types(self) -> int:
        return len(self.type_names)

    @property
    def task_width(self) -> int:
        """Width of the task block of a pending / running row: the type one-hot or the generic features."""
        return len(TASK_FEATURES) if self.inputs == "generic" else self.types

    @property
    def pend_width(self) -> int:
        """Width of a pending row: its features, the task block, the cross-cluster and plan blocks."""
        return N_PEND + self.task_width + self.cross + self.plan

    @property
    def grid(self) -> int:
        return (self.max_cpu + 1) * (self.max_gpu + 1)

    def obs_size(self) -> int:
        T = self.task_width
        return N_CLUSTER + self.pending_size * self.pend_width + self.max_running * (N_RUN + T)


# ---- observations -> tensors -------------------------------------------------------------


def split_obs(obs: np.ndarray, lay: EnvLayout):
    """(B, N, obs_size) -> cluster (B, N, 7), pending (B, N, P, 6+T), running (B, N, R, 5+T)."""
    B, N, _ = obs.shape
    T, P, R = lay.task_width, lay.pending_size, lay.max_running
    clus = obs[..., :N_CLUSTER]
    a = N_CLUSTER + P * lay.pend_width
    pend = obs[..., N_CLUSTER:a].reshape(B, N, P, lay.pend_width)
    run = obs[..., a:a + R * (N_RUN + T)].reshape(B, N, R, N_RUN + T)
    return clus, pend, run


def masks_from_obs(env, obs: dict, lay: EnvLayout) -> np.ndarray:
    """The env's flat action masks re-laid on the common grid: bool (N, P, max_cpu+1, max_gpu+1)
    (a cluster larger than the grid: each cell's mask is that of the allocation it stands for,
    :func:`tapfinger_generic.grid_maps`)."""
    P = lay.pending_size
    out = np.zeros((lay.n, P, lay.max_cpu + 1, lay.max_gpu + 1), dtype=bool)
    maps = None
    for n, a in enumerate(env.possible_agents):
        if a not in obs:
            continue
        c, g = env._caps[n]  # the instance's capacities (a nearest checkpoint's may differ, within its grid)
        own = obs[a]["action_mask"][:-1].reshape(P, c + 1, g + 1).astype(bool)
        if c <= lay.max_cpu and g <= lay.max_gpu:
            out[n, :, :c + 1, :g + 1] = own
            continue
        maps = maps or grid_maps(tuple(env._caps), lay.max_cpu, lay.max_gpu)
        cm, gm = maps[n]
        ic, ig = np.flatnonzero(cm >= 0), np.flatnonzero(gm >= 0)
        out[n][:, ic[:, None], ig[None, :]] = own[:, cm[ic][:, None], gm[ig][None, :]]
    return out


def pending_ids(env, lay: EnvLayout) -> np.ndarray:
    """Task ids in each agent's pending slots, -1 for dummies: int64 (N, P)."""
    ids = np.full((lay.n, lay.pending_size), -1, dtype=np.int64)
    for n in range(lay.n):
        p = env.sim.pending(n)[: lay.pending_size]
        ids[n, :len(p)] = p
    return ids


def build_graph(obs: np.ndarray, ids: np.ndarray, lay: EnvLayout):
    """Node features and edge indices of a batch of B states (obs (B, N, obs_size), ids (B, N, P)),
    as dicts keyed by node type / edge type (torch tensors)."""
    import torch

    x, edges = graph_arrays(obs, ids, lay)
    x = {k: torch.as_tensor(v) for k, v in x.items()}
    return x, {k: torch.as_tensor(v) for k, v in edges.items()}


def graph_arrays(obs: np.ndarray, ids: np.ndarray, lay: EnvLayout):
    """:func:`build_graph` as numpy arrays (float32 node features, int64 (2, E) edge indices)."""
    B, N, _ = obs.shape
    P, R = lay.pending_size, lay.max_running
    clus, pend, run = split_obs(obs, lay)
    dummy = 1.0 - pend[..., :1]
    x = {
        "clus": np.ascontiguousarray(clus.reshape(B * N, -1), dtype=np.float32),
        "pend": np.concatenate([pend, dummy], -1).reshape(B * N * P, -1).astype(np.float32),
        "run": np.ascontiguousarray(run.reshape(B * N * R, -1), dtype=np.float32),
        "short": np.ones((B, 1), dtype=np.float32),
    }
    # running task -> its cluster
    b, n, i = np.nonzero(run[..., 0] > 0.5)
    run_e = np.stack([(b * N + n) * R + i, b * N + n])
    # pending slot -> the cluster holding it
    b, n, p = np.nonzero(pend[..., 0] > 0.5)
    pend_e = np.stack([(b * N + n) * P + p, b * N + n])
    b, s, d = same_task_slots(ids, N, P)
    return x, edge_dict(run_e, pend_e, np.stack([b * N * P + s, b * N * P + d]), B, N)


def same_task_slots(ids: np.ndarray, N: int, P: int):
    """(b, s, d): in state b, pending slot s (of N*P, cluster-major) and slot d of another
    cluster hold the same task (the "same" edges of the graph)."""
    B = ids.shape[0]
    flat = ids.reshape(B, N * P)
    eq = (flat[:, :, None] == flat[:, None, :]) & (flat[:, :, None] >= 0)
    owner = np.repeat(np.arange(N), P)
    eq &= owner[:, None] != owner[None, :]
    return np.nonzero(eq)


def edge_dict(run_e: np.ndarray, pend_e: np.ndarray, same_e: np.ndarray, B: int, N: int) -> dict:
    """The graph's edge index per edge type (:data:`EDGE_TYPES`), each relation and its reverse,
    from the running-on-cluster, pending-in-cluster and same-task pairs; every cluster of state
    b is linked to the state's one "short" node."""
    cs = np.stack([np.arange(B * N), np.repeat(np.arange(B), N)])

    def t(e):
        return np.ascontiguousarray(e, dtype=np.int64).reshape(2, -1)

    return {
        ("run", "on", "clus"): t(run_e), ("clus", "hosts", "run"): t(run_e[::-1]),
        ("pend", "in", "clus"): t(pend_e), ("clus", "holds", "pend"): t(pend_e[::-1]),
        ("pend", "same", "pend"): t(same_e),
        ("clus", "up", "short"): t(cs), ("short", "down", "clus"): t(cs[::-1]),
    }


def packed_graph_arrays(obs: np.ndarray, ids: np.ndarray, lay: EnvLayout):
    """:func:`graph_arrays` without the nodes that cannot change a result (the packed path,
    :data:`PACKED`): absent running rows (no edges; their embeddings are never read) are left
    out, and the dummy pending slots (no edges, all the same features, hence all the same
    embedding) are one shared node, the last ``pend`` row. Returns (x, edges, gather) where
    ``gather`` (B*N*P,) maps every pending slot to its ``pend`` row (dummies: the shared row)."""
    B, N, _ = obs.shape
    P, R = lay.pending_size, lay.max_running
    clus, pend, run = split_obs(obs, lay)
    pres = pend[..., 0] > 0.5
    pb, pn, pp = np.nonzero(pres)
    K = len(pb)
    rows = np.empty((K + 1, pend.shape[-1] + 1), dtype=np.float32)
    rows[:K, :-1] = pend[pb, pn, pp]
    rows[:K, -1] = 0.0
    rows[K] = 0.0
    rows[K, -1] = 1.0  # a dummy slot: all features 0, dummy flag 1 (as graph_arrays)
    gather = np.full(B * N * P, K, dtype=np.int64)
    flat_slot = (pb * N + pn) * P + pp
    gather[flat_slot] = np.arange(K)
    rb, rn, ri = np.nonzero(run[..., 0] > 0.5)
    x = {
        "clus": np.ascontiguousarray(clus.reshape(B * N, -1), dtype=np.float32),
        "pend": rows,
        "run": np.ascontiguousarray(run[rb, rn, ri], dtype=np.float32).reshape(len(rb), run.shape[-1]),
        "short": np.ones((B, 1), dtype=np.float32),
    }
    run_e = np.stack([np.arange(len(rb)), rb * N + rn])
    pend_e = np.stack([np.arange(K), pb * N + pn])
    b, s, d = same_task_slots(ids, N, P)  # present slots only (ids of dummies are < 0), as graph_arrays
    return x, edge_dict(run_e, pend_e, np.stack([gather[b * N * P + s], gather[b * N * P + d]]), B, N), gather


def pointer_layer_packed(layer, x, pad_index, back, key_bias, BN: int, L: int):
    """One post-norm ``nn.TransformerEncoderLayer`` (ReLU, no dropout: the pointer's layers)
    on packed tokens ``x`` (M, d): the linear layers see the real tokens only; attention runs
    on the padded (BN, L) layout (``pad_index``: (BN*L,) rows of ``x``, M = a zero row;
    ``key_bias``: (BN, 1, 1, L), -inf on padding keys) and ``back`` (M,) picks each token's
    row again. Same arithmetic in exact terms as the module with ``src_key_padding_mask``."""
    import torch
    from torch.nn import functional as F

    sa = layer.self_attn
    M, d = x.shape
    H = sa.num_heads
    D = d // H
    qkv = F.linear(x, sa.in_proj_weight, sa.in_proj_bias)
    qkv = torch.cat([qkv, qkv.new_zeros(1, 3 * d)])[pad_index].view(BN, L, 3, H, D).permute(2, 0, 3, 1, 4)
    q, k, v = qkv.unbind(0)  # (BN, H, L, D)
    att = q @ k.transpose(-1, -2) * (1.0 / math.sqrt(D)) + key_bias
    att = (att - att.amax(-1, keepdim=True)).exp()  # softmax by hand: torch's is 4x slower on a last dim of ~10
    att = att / att.sum(-1, keepdim=True)
    o = (att @ v).transpose(1, 2).reshape(BN * L, d)[back]
    x = layer.norm1(x + F.linear(o, sa.out_proj.weight, sa.out_proj.bias))
    return layer.norm2(x + layer.linear2(torch.relu(layer.linear1(x))))


# ---- the network -------------------------------------------------------------------------

NODE_TYPES = ["clus", "pend", "run", "short"]
#: the fused layer applies each node type's projections to that type's nodes only (True), or
#: every projection to every node (False: the first path, 4x the work; kept for
#: ``bench/bench_learned.py``'s side-by-side throughput and the test that both agree)
TYPED_PROJECTIONS = True
_LAYER_CLS = None
#: training and sampling take the packed path (True: :func:`packed_graph_arrays` and
#: :func:`pointer_layer_packed` -- the linear layers see the real nodes and tokens only, the same
#: values in exact arithmetic; the MAPPO update's forward and backward and ``act_batch`` with
#: ``greedy=False``), or the first path everywhere (False: kept for ``bench/bench_learned.py``'s
#: side-by-side throughput and the test that both agree). Greedy acting (the solvers, every
#: evaluation: float64, ties within TIE_TOL) always takes the first path, so that no decision of
#: a shipped checkpoint changes.
PACKED = True
#: sampled acting (``act_batch`` with ``greedy=False``) draws every agent's slot and allocation
#: in one array operation each (:func:`_draw`); False: one ``rng.choice`` per agent (the first
#: path, for the side-by-side benchmark). Greedy acting draws nothing.
ARRAY_SAMPLING = True


def hetero_attention_layer():
    """The class of the fused heterogeneous graph attention layer (built on first use, so that
    torch_geometric loads only when a model is made): :class:`HeteroGraphAttention`."""
    global _LAYER_CLS
    if _LAYER_CLS is not None:
        return _LAYER_CLS
    import torch
    from torch import nn
    from torch_geometric.nn import MessagePassing
    from torch_geometric.utils import softmax

    class HeteroGraphAttention(MessagePassing):
        """Heterogeneous graph attention in one message-passing pass over all node and edge
        types (the attention of HGT, Hu et al. 2020, with diagonal relation transforms):
        per node type keys, queries and values (``kqv``), per edge type r a relation vector on
        the keys and on the values and a prior per head (``mu``); attention
        softmax over the in-edges of a node of (q_dst . (k_src * rk_r)) mu_r / sqrt(D), message
        v_src * rv_r, then GELU, a per-node-type output projection and a gated skip per node
        type (as HGT). The nodes are one tensor with a type index per node and the edges one
        index with a type per edge, so the cost does not grow with the number of types."""

        def __init__(self, d: int, heads: int, num_node_types: int, num_edge_types: int) -> None:
            super().__init__(aggr="add", node_dim=0)
            if d % heads:
                raise InputError(f"hidden {d} must be a multiple of heads {heads}", field="hidden")
            self.d, self.H, self.D, self.T = d, heads, d // heads, num_node_types
            self.kqv = nn.Linear(d, num_node_types * 3 * d)
            self.out = nn.Linear(d, num_node_types * d)
            self.rel_k = nn.Parameter(torch.ones(num_edge_types, heads, self.D))
            self.rel_v = nn.Parameter(torch.ones(num_edge_types, heads, self.D))
            self.mu = nn.Parameter(torch.ones(num_edge_types, heads))
            self.skip = nn.Parameter(torch.ones(num_node_types))

        def forward(self, x, ntype, edge_index, etype, counts=None, relations=None):
            """``counts``: the number of nodes of each type when the nodes are sorted by type
            (as :func:`flat_graph` lays them out): each node type's projections are then applied
            to its own rows only (the typed path, 1/T of the work); without it every projection
            is applied to every node and the node's own type's row is picked (the first path,
            kept for the side-by-side benchmark and the test that both agree). ``relations``
            (the packed path, :func:`relation_index`): the relation vectors and priors are
            applied to each edge type's source nodes once instead of to every edge."""
            n, d, H, D = x.size(0), self.d, self.H, self.D
            kqv = self._typed(self.kqv, x, ntype, counts, 3 * d)
            k, q, v = kqv.view(n, 3, H, D).unbind(1)
            if relations is not None:
                agg = self._relation_messages(k, q, v, edge_index[1], relations)
            else:
                agg = self.propagate(edge_index, k=k, q=q, v=v, etype=etype, size=(n, n))
            out = self._typed(self.out, torch.nn.functional.gelu(agg.reshape(n, d)), ntype, counts, d)
            a = torch.sigmoid(self.skip)[ntype].unsqueeze(-1)
            return a * out + (1 - a) * x

        def _typed(self, lin, x, ntype, counts, width):
            """Per node type t, rows t*width..(t+1)*width of ``lin`` applied to the nodes of type t."""
            if counts is None:
                rows = torch.arange(x.size(0), device=x.device)
                return lin(x).view(x.size(0), self.T, width)[rows, ntype]
            w, b = lin.weight.view(self.T, width, -1), lin.bias.view(self.T, width)
            parts = [torch.nn.functional.linear(xs, w[t], b[t])
                     for t, xs in enumerate(torch.split(x, list(counts))) if xs.size(0)]
            return torch.cat(parts) if parts else x.new_zeros(0, width)

        def _relation_messages(self, k, q, v, dst, relations):
            """The attention and messages of :meth:`message` with each edge type's relation vector
            and prior applied to its source nodes' keys and values (one row per (edge type, source
            node)), then gathered per edge: the same values in exact arithmetic."""
            n, H, D = k.shape
            spans, src = relations
            kr = torch.cat([k[a:b] * (self.rel_k[t] * (self.mu[t] / math.sqrt(D)).unsqueeze(-1))
                            for t, (a, b) in enumerate(spans)])
            vr = torch.cat([v[a:b] * self.rel_v[t] for t, (a, b) in enumerate(spans)])
            att = softmax((q.index_select(0, dst) * kr.index_select(0, src)).sum(-1), dst, num_nodes=n)
            msg = vr.index_select(0, src) * att.unsqueeze(-1)
            return msg.new_zeros(n, H, D).index_add_(0, dst, msg)

        def message(self, k_j, q_i, v_j, etype, index, ptr, size_i):
            att = (q_i * k_j * self.rel_k[etype]).sum(-1) * self.mu[etype] / math.sqrt(self.D)
            att = softmax(att, index, ptr, size_i)
            return v_j * self.rel_v[etype] * att.unsqueeze(-1)

    _LAYER_CLS = HeteroGraphAttention
    return _LAYER_CLS


def flat_graph(x: dict, edges: dict, device=None):
    """Node offsets of the types in one node tensor (in :data:`NODE_TYPES` order), the node-type
    index, one edge index and its edge-type index (in :data:`EDGE_TYPES` order), from
    :func:`graph_arrays`' dicts (numpy in, torch out)."""
    import torch

    off, o = {}, 0
    for k in NODE_TYPES:
        off[k] = o
        o += len(x[k])
    ntype = np.repeat(np.arange(len(NODE_TYPES)), [len(x[k]) for k in NODE_TYPES])
    ei = np.concatenate([edges[e] + np.array([[off[e[0]]], [off[e[2]]]]) for e in EDGE_TYPES], 1)
    et = np.repeat(np.arange(len(EDGE_TYPES)), [edges[e].shape[1] for e in EDGE_TYPES])
    return off, torch.as_tensor(ntype, device=device), torch.as_tensor(ei, device=device), torch.as_tensor(et, device=device)



def relation_index(x: dict, edges: dict, device=None):
    """For :meth:`HeteroGraphAttention._relation_messages` (the packed path): per edge type (in
    :data:`EDGE_TYPES` order) the node span (start, end) of its source type in the
    :func:`flat_graph` layout, and each edge's source as a row of the per-(edge type, source
    node) table those spans stack into."""
    import torch

    off, o = {}, 0
    for k in NODE_TYPES:
        off[k] = o
        o += len(x[k])
    spans, src, base = [], [], 0
    for e in EDGE_TYPES:
        a = off[e[0]]
        spans.append((a, a + len(x[e[0]])))
        src.append(edges[e][0] + base)
        base += len(x[e[0]])
    return spans, torch.as_tensor(np.concatenate(src), device=device)


def resolve_device(name: str = "auto"):
    """The torch device for training: "auto" = CUDA when available, else the CPU; "cpu" or
    "cuda[:k]" as given (InputError when CUDA is asked for and absent, or device k does not exist)."""
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise InputError("CUDA is not available on this machine", field="device")
    try:
        device = torch.device(name)
    except (RuntimeError, ValueError) as exc:
        raise InputError(f"not a torch device: {exc}", field="device") from None
    if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
        raise InputError(f"{name}: this machine has {torch.cuda.device_count()} CUDA device(s), "
                         f"numbered from 0", field="device")
    return device


def make_deterministic(device) -> None:
    """Same seed, same weights on a GPU as on the CPU: on ``cuda`` devices, switch torch to its
    deterministic algorithms (and cuBLAS to a fixed workspace, read when its handle is created, so
    before the first CUDA work). Without it, CUDA's atomics-based scatter / index kernels and
    cuBLAS's reductions make two runs of one seed drift apart (measured on an NVIDIA H200: weights
    0.028 apart after 6 updates, and a stopped-and-resumed run no closer); with it a repeat and a
    resume are bit-identical, at no measurable cost to the throughput (bench/tapfinger_device.py,
    docs/tapfinger.md, "Training on a GPU"). The CPU is deterministic already and left as is."""
    import torch

    if getattr(device, "type", str(device)).startswith("cuda"):
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)


def make_model(cfg: ModelConfig, lay: EnvLayout):
    """A TapFingerNet (torch.nn.Module) for this architecture and layout."""
    import torch
    from torch import nn

    class TapFingerNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.cfg, self.lay = cfg, lay
            #: generic inputs: score only the allowed cells in the allocation head (False, the
            #: default: every cell of the grid, then masked, as the first generic models were
            #: trained; ``train tapfinger --sparse-alloc``). The same logits in exact arithmetic
            #: and about 2.5x the update's throughput at hetero-6, but not the same bits: the
            #: backward's sums over the cells run in another order, and Adam turns last-bit
            #: differences of near-zero gradients into lr-sized steps, so a training run leaves
            #: the default's trajectory (docs/tapfinger.md, "Type-generic inputs: throughput").
            #: Not part of the checkpoint: a run-time choice of the trainer.
            self.sparse_alloc = False
            d, T = cfg.hidden, lay.task_width
            if cfg.inputs not in ("onehot", "generic"):
                raise InputError(f"inputs must be 'onehot' or 'generic', got {cfg.inputs!r}", field="inputs")
            if cfg.inputs != lay.inputs:
                raise InputError(f"the model's inputs are {cfg.inputs!r}, the layout's {lay.inputs!r}", field="inputs")
            if cfg.cell_features not in CELL_FEATURE_SETS:
                raise InputError(f"cell_features must be 'v1' or 'v2', got {cfg.cell_features!r}",
                                 field="cell_features")
            if cfg.cell_features != "v1" and cfg.inputs != "generic":
                raise InputError("cell features v2 need generic inputs (--inputs generic)", field="cell_features")
            if cfg.inputs == "generic" and cfg.encoder != "graph":
                raise InputError("generic inputs need the graph encoder (the mlp ablation reads a fixed-size "
                                 "observation)", field="encoder")
            dims = {"clus": N_CLUSTER, "pend": lay.pend_width + 1, "run": N_RUN + T, "short": 1}
            self.inp = nn.ModuleDict({k: nn.Linear(v, d) for k, v in dims.items()})
            if cfg.encoder == "graph":
                if cfg.conv == "fused":  # one message-passing pass over all node and edge types per layer
                    layer_cls = hetero_attention_layer()
                    self.convs = nn.ModuleList([layer_cls(d, cfg.heads, len(NODE_TYPES), len(EDGE_TYPES))
                                                for _ in range(cfg.layers)])
                    self.ln_w = nn.Parameter(torch.ones(cfg.layers, len(NODE_TYPES), d))
                    self.ln_b = nn.Parameter(torch.zeros(cfg.layers, len(NODE_TYPES), d))
                elif cfg.conv == "hgt":  # PyG's HGTConv: all node and edge types in one grouped pass
                    from torch_geometric.nn import HGTConv

                    self.convs = nn.ModuleList([HGTConv(d, d, (list(dims), EDGE_TYPES), heads=cfg.heads)
                                                for _ in range(cfg.layers)])
                elif cfg.conv == "gat":
                    from torch_geometric.nn import GATConv, HeteroConv

                    self.convs = nn.ModuleList([
                        HeteroConv({e: GATConv((d, d), d // cfg.heads, heads=cfg.heads, add_self_loops=False)
                                    for e in EDGE_TYPES}, aggr="sum")
                        for _ in range(cfg.layers)])
                else:
                    raise InputError(f"conv must be 'fused', 'hgt' or 'gat', got {cfg.conv!r}", field="conv")
                if cfg.conv != "fused":
                        self.norms = nn.ModuleList([nn.ModuleDict({k: nn.LayerNorm(d) for k in dims})
                                                for _ in range(cfg.layers)])
            elif cfg.encoder == "mlp":
                flat = lay.obs_size()
                self.agent_mlp = nn.Sequential(nn.Linear(flat, d), nn.ReLU(), nn.Linear(d, d), nn.ReLU())
                self.pend_mlp = nn.Sequential(nn.Linear(2 * d, d), nn.ReLU(), nn.Linear(d, d))
            else:
                raise InputError(f"encoder must be 'graph' or 'mlp', got {cfg.encoder!r}", field="encoder")
            layer = nn.TransformerEncoderLayer(d, cfg.heads, 2 * d, dropout=0.0, batch_first=True)
            self.pointer_enc = nn.TransformerEncoder(layer, cfg.pointer_layers, enable_nested_tensor=False)
            self.W1 = nn.Linear(d, d, bias=False)
            self.W2 = nn.Linear(d, d)
            self.v = nn.Linear(d, 1, bias=False)
            self.void = nn.Parameter(torch.zeros(d))
            if cfg.inputs == "generic":  # one shared MLP over (slot, cluster, cell features) per cell
                self.alloc_ctx = nn.Linear(2 * d, d)
                self.alloc_cell = nn.Linear(len(CELL_FEATURE_SETS[cfg.cell_features]), d, bias=False)
                self.alloc_out = nn.Linear(d, 1)
                # per agent: its pending slots' mean, its cluster, the mean over the clusters
                self.critic = nn.Sequential(nn.Linear(3 * d, d), nn.Tanh(), nn.Linear(d, 1))
            else:
                self.alloc = nn.Sequential(nn.Linear(2 * d, d), nn.ReLU(), nn.Linear(d, lay.grid))
                self.critic = nn.Sequential(nn.Linear(lay.n * lay.pending_size * d + lay.n * d, d), nn.Tanh(),
                                            nn.Linear(d, lay.n))

        def encode(self, obs: np.ndarray, ids: np.ndarray, packed: bool = False):
            """Pending embeddings (B, N, P, d) and cluster embeddings (B, N, d) (``packed``: the
            graph of :func:`packed_graph_arrays`, the fused layer only)."""
            B, N, _ = obs.shape
            P, d = self.lay.pending_size, self.cfg.hidden
            dev = self.void.device
            if self.cfg.encoder == "graph" and self.cfg.conv == "fused":
                if packed:
                    xa, ea, gather = packed_graph_arrays(obs, ids, self.lay)
                else:
                    xa, ea = graph_arrays(obs, ids, self.lay)
                off, ntype, ei, et = flat_graph(xa, ea, dev)
                dt = self.void.dtype
                z = torch.cat([torch.relu(self.inp[k](torch.as_tensor(xa[k], device=dev, dtype=dt))) for k in NODE_TYPES])
                counts = [len(xa[k]) for k in NODE_TYPES] if TYPED_PROJECTIONS or packed else None
                rel = relation_index(xa, ea, dev) if packed else None
                for i, conv in enumerate(self.convs):
                    z = conv(z, ntype, ei, et, counts, rel) if packed else conv(z, ntype, ei, et, counts)
                    z = torch.nn.functional.layer_norm(z, (d,)) * self.ln_w[i][ntype] + self.ln_b[i][ntype]
                clus = z[off["clus"]:off["clus"] + B * N]
                if packed:  # every slot's row (the dummies share the last pend row)
                    pend = z[off["pend"]:off["pend"] + len(xa["pend"])][torch.as_tensor(gather, device=dev)]
                else:
                    pend = z[off["pend"]:off["pend"] + B * N * P]
                return pend.view(B, N, P, d), clus.view(B, N, d)
            x, edges = build_graph(obs, ids, self.lay)
            x = {k: v.to(dev, self.void.dtype) for k, v in x.items()}
            edges = {k: v.to(dev) for k, v in edges.items()}
            h = {k: torch.relu(self.inp[k](v)) for k, v in x.items()}
            if self.cfg.encoder == "graph":
                hgt = self.cfg.conv == "hgt"
                for conv, norm in zip(self.convs, self.norms):
                    out = conv(h, edges)
                    if hgt:  # HGTConv already mixes its input in (gated skip)
                        h = {k: norm[k](out[k]) if out.get(k) is not None else h[k] for k in h}
                    else:
                        h = {k: norm[k](h[k] + torch.relu(out[k])) if k in out else h[k] for k in h}
                return h["pend"].view(B, N, P, d), h["clus"].view(B, N, d)
            agent = self.agent_mlp(torch.as_tensor(obs, dtype=self.void.dtype, device=dev))  # (B, N, d)
            pend = h["pend"].view(B, N, P, d)
            pend = self.pend_mlp(torch.cat([pend, agent[:, :, None, :].expand(B, N, P, d)], -1))
            return pend, agent

        def forward(self, obs: np.ndarray, ids: np.ndarray, masks: torch.Tensor, void_ok: np.ndarray | None = None,
                    values: bool = True, critic_grad: bool = True, packed: bool = False, slot_ok=None):
            """Pointer logits (B, N, P+1; the last is void; masked entries NEG), the pointer
            transformer's slot embeddings (B, N, P, d), cluster embeddings (B, N, d), values (B, N).
            ``masks``: bool (B, N, P, C+1, G+1) allocation masks; ``void_ok``: bool (B, N), whether
            the void entry may be chosen (default: always); ``values=False`` skips the critic
            (zeros); ``critic_grad=False`` detaches the critic's input (its loss leaves the
            encoder, i.e. the actor, alone). ``packed``: the packed path (:data:`PACKED`; the
            same values in exact arithmetic, the slot embeddings of dummy slots 0). ``slot_ok``:
            bool (B, N, P), the slots with an allowed allocation, when the caller has them
            (``masks`` is then not read and may be None)."""
            pend, clus = self.encode(obs, ids, packed=packed)
            dev = pend.device
            B, N, P, d = pend.shape
            if slot_ok is None:
                slot_ok = masks.to(dev).flatten(3).any(-1)  # (B, N, P)
            else:
                slot_ok = torch.as_tensor(slot_ok, device=dev)
            W = self.lay.pend_width
            dummy_np = obs[..., N_CLUSTER:N_CLUSTER + P * W].reshape(B, N, P, -1)[..., 0] < 0.5
            if packed:
                u, z = self._pointer_packed(pend, dummy_np)
            else:
                dummy = torch.as_tensor(dummy_np, device=dev)
                seq = torch.cat([pend.reshape(B * N, P, d), self.void.expand(B * N, 1, d)], 1)
                pad = torch.cat([dummy.reshape(B * N, P), torch.zeros(B * N, 1, dtype=torch.bool, device=dev)], 1)
                z = self.pointer_enc(seq, src_key_padding_mask=pad)
                keep = (~pad[:, :P]).to(z.dtype).unsqueeze(-1)
                mean = (z[:, :P] * keep).sum(1) / keep.sum(1).clamp(min=1.0)
                u = self.v(torch.tanh(self.W1(z) + self.W2(mean).unsqueeze(1))).squeeze(-1).view(B, N, P + 1)
            vo = (torch.ones(B, N, 1, dtype=torch.bool, device=dev) if void_ok is None
                  else torch.as_tensor(void_ok, device=dev).view(B, N, 1))
            ok = torch.cat([slot_ok, vo | ~slot_ok.any(-1, keepdim=True)], -1)
            logits = u.masked_fill(~ok, NEG)
            if values and self.cfg.inputs == "generic":
                h = torch.cat([pend.mean(2), clus, clus.mean(1, keepdim=True).expand(B, N, d)], -1)
                values = self.critic(h if critic_grad else h.detach()).squeeze(-1)
            elif values:
                h = torch.cat([pend.reshape(B, -1), clus.reshape(B, -1)], -1)
                values = self.critic(h if critic_grad else h.detach())
            else:  # acting only (solvers, evaluation): no critic
                values = torch.zeros(B, N, device=dev)
            return logits, z[:, :P].reshape(B, N, P, d), clus, values

        def _pointer_packed(self, pend, dummy: np.ndarray):
            """The pointer on the real slots and the void entries only (:func:`pointer_layer_packed`):
            (scores u (B, N, P+1), slot embeddings (B*N, P+1, d), dummy rows 0)."""
            B, N, P, d = pend.shape
            BN, L = B * N, P + 1
            dev = pend.device
            real = np.flatnonzero(~dummy.reshape(-1))  # real slots, in (agent, slot) order
            K = len(real)
            agent, pos = np.divmod(real, P)
            M = K + BN
            back = np.concatenate([agent * L + pos, np.arange(BN) * L + P])
            pad_index = np.full(BN * L, M, dtype=np.int64)
            pad_index[back] = np.arange(M)
            bias = np.zeros((BN, 1, 1, L), dtype=np.float32)
            bias.reshape(BN, L)[:, :P][dummy.reshape(BN, P)] = -np.inf
            t = functools.partial(torch.as_tensor, device=dev)
            pad_t, back_t = t(pad_index), t(back)
            bias_t = t(bias, dtype=pend.dtype)
            x = torch.cat([pend.reshape(BN * P, d)[t(real)], self.void.expand(BN, d)])
            for layer in self.pointer_enc.layers:
                x = pointer_layer_packed(layer, x, pad_t, back_t, bias_t, BN, L)
            agent_t = t(agent)
            cnt = t(np.maximum(np.bincount(agent, minlength=BN), 1), dtype=x.dtype).unsqueeze(-1)
            mean = x.new_zeros(BN, d).index_add(0, agent_t, x[:K]) / cnt
            owner = torch.cat([agent_t, torch.arange(BN, device=dev)])
            u = self.v(torch.tanh(self.W1(x) + self.W2(mean)[owner])).squeeze(-1)
            u = torch.cat([u, u.new_zeros(1)])[pad_t].view(B, N, L)
            z = torch.cat([x, x.new_zeros(1, d)])[pad_t].view(BN, L, d)
            return u, z

        def alloc_logits(self, z: torch.Tensor, clus: torch.Tensor, slot: torch.Tensor, masks: torch.Tensor,
                         cells=None):
            """Allocation logits (B, N, grid) for the chosen slots (B, N) (void: slot 0, ignored);
            ``cells`` (generic inputs): the chosen slots' cell features (B, N, grid, F)."""
            B, N, P, d = z.shape
            s = slot.clamp(max=P - 1)
            hj = torch.gather(z, 2, s.view(B, N, 1, 1).expand(B, N, 1, d)).squeeze(2)
            m = torch.gather(masks.flatten(3), 2, s.view(B, N, 1, 1).expand(B, N, 1, self.lay.grid)).squeeze(2)
            return self.alloc_head(hj, clus, m, cells)

        def alloc_head(self, hj: torch.Tensor, clus: torch.Tensor, allowed: torch.Tensor, cells=None, *,
                       compact: bool = False):
            """Allocation logits (..., grid) of slot embeddings ``hj`` on clusters ``clus`` (..., d)
            with the allowed cells ``allowed`` (..., grid) (a row with none allowed stays finite).
            Generic inputs: each cell scored by one shared MLP from (hj, clus, its features
            ``cells`` (..., grid, F)), so the grid's size is no parameter of the network: every
            cell of every row in one batch, then masked (:attr:`sparse_alloc`: the allowed ones only).
            ``compact``: ``cells`` holds the allowed cells' features only, (K, F) in the order of
            ``allowed``'s nonzero entries (:func:`winner_cells`; every row has an allowed cell);
            they are laid out on the grid (the other cells 0), unless :attr:`sparse_alloc`."""
            allowed = allowed | ~allowed.any(-1, keepdim=True)  # rows with nothing allowed (void picks): keep finite
            if self.cfg.inputs != "generic":
                return self.alloc(torch.cat([hj, clus], -1)).masked_fill(~allowed, NEG)
            G = allowed.shape[-1]
            ok = allowed.reshape(-1, G)
            x = torch.as_tensor(cells, dtype=hj.dtype, device=hj.device)
            ctx = self.alloc_ctx(torch.cat([hj, clus], -1))
            if self.sparse_alloc and compact:  # training: the allowed cells only (the same values in exact
                rows, cols = ok.nonzero(as_tuple=True)  # arithmetic, not bit for bit; greedy acting never)
                vals = self.alloc_out(torch.relu(ctx.reshape(-1, ctx.shape[-1])[rows] + self.alloc_cell(x))).squeeze(-1)
                return vals.new_full(ok.shape, NEG).index_put((rows, cols), vals).view(allowed.shape)
            if compact:  # laid out on the grid (the other cells 0: their logits are NEG, their gradients 0)
                x = x.new_zeros(ok.shape + x.shape[-1:]).index_put(ok.nonzero(as_tuple=True), x)
                x = x.view(allowed.shape + x.shape[-1:])
            # (cell + ctx in place, then ReLU in place: the same values as ctx + cell, two fewer
            # grid-sized tensors; the linear layer's backward needs its input, not its output)
            h = torch.relu_(self.alloc_cell(x).add_(ctx.unsqueeze(-2)))
            return self.alloc_out(h).squeeze(-1).masked_fill(~allowed, NEG)

    return TapFingerNet()


# ---- acting --------------------------------------------------------------------------------


def _copies(env, j: int, n: int) -> float:
    return env._copies(j, n)  # the env's Pr(n) numerator: copies of j fitting n at its minimum


def void_allowed(env, lay: EnvLayout, rule: str = "cluster") -> np.ndarray:
    """Per agent, whether the pointer may pick the void entry when a pending task can start.
    Rule "system" (the default of new models): while any cluster runs a task (a cluster may
    wait for a better start, as the exact schedules do; when nothing runs anywhere every agent
    that can start a task must, so no policy can stall an episode). Rule "cluster" (the first
    shipped checkpoints): never in variant "single" (one start per step, as the paper's
    single-task pointer); in "multi" only while the agent's own cluster runs something. In
    "multi" the void entry ends the agent's logical steps for the interval."""
    sim = env.sim
    if rule == "system":
        busy = any(len(sim.running(n)) > 0 for n in range(lay.n))
        return np.full(lay.n, busy, dtype=bool)
    if rule != "cluster":
        raise InputError(f"void_rule must be 'system' or 'cluster', got {rule!r}", field="void_rule")
    if not sim.multi:
        return np.zeros(lay.n, dtype=bool)
    return np.array([len(sim.running(n)) > 0 for n in range(lay.n)], dtype=bool)


def acting_model(model):
    """A float64 copy of ``model`` in eval mode for greedy acting (the same model when it is
    float64 already; :mod:`edgebench.learned.acting`); the weights are the checkpoint's float32
    values, exactly."""
    import torch

    if model.void.dtype == torch.float64:
        return model.eval()
    return copy.deepcopy(model).double().eval()


def act(model, env, obs: dict, lay: EnvLayout, rng: np.random.Generator, *, greedy: bool, values: bool = True,
        temperature: float = 1.0):
    """One joint decision for the live agents of one env: (env actions dict, record); see
    :func:`act_batch` (the compact ``cells`` of generic inputs have no env axis: all are this env's)."""
    actions, recs = act_batch(model, [env], [obs], lay, rng, greedy=greedy, values=values, temperature=temperature)
    return actions[0], {k: v if k == "cells" else v[0] for k, v in recs.items()}


def _draw(rng: np.random.Generator, weights: np.ndarray) -> np.ndarray:
    """One index per row of ``weights`` (..., K; non-negative), drawn with probability
    proportional to the weights (inverse CDF of one uniform per row; a row of zeros gives K-1)."""
    cdf = np.cumsum(weights, -1, dtype=np.float64)
    u = rng.random(cdf.shape[:-1]) * cdf[..., -1]
    return np.minimum((cdf <= u[..., None]).sum(-1), weights.shape[-1] - 1)


def act_batch(model, envs: list, obs_list: list[dict], lay: EnvLayout, rng: np.random.Generator, *,
              greedy: bool, values: bool = True, temperature: float = 1.0):
    """One joint decision in each of several envs (one forward pass). Returns (list of env
    action dicts, record) where the record holds the arrays the rollout buffer stores, with a
    leading env axis: obs (N, obs_size), ids (N, P), masks (N, P, C+1, G+1), slot (N; P =
    void), alloc (N; flat grid index), m (N; 1 if the agent won its task), active (N; the
    agent had a non-void action), logp (N), value (N), slot_ok (N, P: the slots with an allowed
    allocation), alloc_ok (N, grid: the chosen slot's allowed cells), and margin (a scalar per
    env: the smallest margin of its greedy choices, :func:`pick_max`; inf when there was none).

    Each agent samples (greedy: takes the argmax of, :func:`pick_max`) its pointer distribution Pr(j | n); when
    several agents pick the same task j, Pr(n | j) ~ Pr(j | n) Pr(n) with Pr(n) proportional
    to the copies of j that fit n at its minimum decides: the argmax agent wins (m = 1), the
    others send the void action (their pointer choice stays in the record with m = 0). The
    winners then choose an allocation from the masked allocation head. ``values=False`` skips the
    critic (the record's values are then 0). ``temperature``: sampled acting draws from the
    softmax of logits / temperature (pointer and allocation heads; the record's logp is of that
    policy); 1 (training, and every greedy choice) leaves the logits as they are."""
    import torch

    E, N, P = len(envs), lay.n, lay.pending_size
    bind_layout(model, lay)
    o = np.stack([np.stack([obs[a]["observation"] if a in obs else np.zeros(lay.obs_size(), np.float32)
                            for a in env.possible_agents]) for env, obs in zip(envs, obs_list)])
    ids = np.stack([pending_ids(env, lay) for env in envs])
    masks = np.stack([masks_from_obs(env, obs, lay) for env, obs in zip(envs, obs_list)])
    void_ok = np.stack([void_allowed(env, lay, model.cfg.void_rule) for env in envs])
    dev = model.void.device
    mt = torch.as_tensor(masks, device=dev)
    slot_ok = masks.reshape(E, N, P, -1).any(-1)  # (E, N, P): the slots with an allowed allocation
    packed = PACKED and not greedy
    with torch.inference_mode():
        logits, z, clus, values = model(o, ids, mt, void_ok, values, **({"packed": True, "slot_ok": slot_ok} if packed else {}))
        ok_all = logits.cpu().numpy() > NEG / 2
        if tempered := (temperature != 1.0 and not greedy):
            logits = logits / temperature
        probs = torch.softmax(logits, -1).cpu().numpy()  # (E, N, P+1)
        lsm = torch.log_softmax(logits.double(), -1).cpu().numpy()
    active = slot_ok.any(-1)
    slot = np.full((E, N), P, dtype=np.int64)
    m = np.zeros((E, N), dtype=np.int64)
    margin = np.full(E, np.inf)  # per env, the smallest greedy decision margin of this call (pick_max)
    sample_all = ARRAY_SAMPLING and not greedy
    if sample_all and model.cfg.pointer != "random":  # every agent's draw at once
        slot[:] = np.where(active, _draw(rng, np.where(ok_all, probs, 0.0)), P)
    for e, env in enumerate(envs):
        for n in range(N):
            if not active[e, n]:
                continue
            ok = ok_all[e, n]
            if model.cfg.pointer == "random":  # ablation: uniform over the placeable slots
                cand = np.flatnonzero(ok[:P])
                slot[e, n] = int(rng.choice(cand)) if len(cand) else P
            elif greedy:
                slot[e, n], gap = pick_max(lsm[e, n], ok)
                margin[e] = min(margin[e], gap)
            elif not sample_all:
                p = np.where(ok, probs[e, n], 0.0)
                slot[e, n] = int(rng.choice(P + 1, p=p / p.sum()))
        by_task: dict[int, list[int]] = {}
        for n in range(N):
            if slot[e, n] < P:
                by_task.setdefault(int(ids[e, n, slot[e, n]]), []).append(n)
        for j, ns in by_task.items():  # Bayes' rule; a lone pick wins trivially
            copies = np.array([_copies(env, j, n) for n in ns], dtype=float)
            copies = np.where(np.isinf(copies), 1e9, copies)
            with np.errstate(divide="ignore"):  # log 0 = -inf: a cluster that fits no copy
                post = np.array([lsm[e, n, slot[e, n]] for n in ns]) + np.log(copies)
            win, gap = pick_max(post)
            m[e, ns[win]] = 1
            if greedy and len(ns) > 1:
                margin[e] = min(margin[e], gap)
    chosen = decision_records(envs, ids, masks, slot, m, lay, generic=model.cfg.inputs == "generic",
                              slot_ok=slot_ok, cell_features=model.cfg.cell_features)
    own, cells = chosen["alloc_ok"], chosen.get("cells")
    alloc = np.zeros((E, N), dtype=np.int64)
    if sample_all:  # the winners' allocation heads only, all drawn at once
        win = np.flatnonzero(m.reshape(-1))
        ap_win = np.ones((E, N))  # the probability of each winner's drawn allocation
        if len(win):
            okw = own.reshape(E * N, -1)[win]
            with torch.inference_mode():
                wt = torch.as_tensor(win, device=dev)
                hj = z.reshape(E * N, P, -1)[wt, torch.as_tensor(slot.reshape(-1)[win], device=dev)]
                al = model.alloc_head(hj, clus.reshape(E * N, -1)[wt], torch.as_tensor(okw, device=dev), cells,
                                      compact=True)
                apw = torch.softmax(al / temperature if tempered else al, -1).cpu().numpy()
            drawn = _draw(rng, np.where(okw, apw, 0.0))
            alloc.reshape(-1)[win] = drawn
            ap_win.reshape(-1)[win] = apw[np.arange(len(win)), drawn]
    else:
        with torch.inference_mode():
            al = model.alloc_logits(z, clus, torch.as_tensor(slot, device=dev), mt,
                                    None if cells is None else grid_cells(cells, own, m))
            if tempered:
                al = al / temperature
            ap = torch.softmax(al, -1).cpu().numpy()
            alsm = torch.log_softmax(al.double(), -1).cpu().numpy()
    logp = np.zeros((E, N))
    G1 = lay.max_gpu + 1
    all_actions = []
    for e, (env, obs) in enumerate(zip(envs, obs_list)):
        actions = {}
        for n, a in enumerate(env.possible_agents):
            if a not in obs:
                continue
            lp = math.log(max(probs[e, n, slot[e, n]], 1e-30)) if active[e, n] else 0.0
            if m[e, n]:
                okm = masks[e, n, slot[e, n]].ravel()
                if greedy:
                    alloc[e, n], gap = pick_max(alsm[e, n], okm)
                    margin[e] = min(margin[e], gap)
                elif not sample_all:
                    p = np.where(okm, ap[e, n], 0.0)
                    alloc[e, n] = int(rng.choice(len(p), p=p / p.sum()))
                lp += math.log(max(ap_win[e, n] if sample_all else ap[e, n, alloc[e, n]], 1e-30))
                c, g = divmod(int(alloc[e, n]), G1)
                cm, gm = grid_maps(tuple(env._caps), lay.max_cpu, lay.max_gpu)[n]  # the cluster's own grid
                actions[a] = env.encode_action(a, int(slot[e, n]), int(cm[c]), int(gm[g]))
            else:
                actions[a] = env.void_action(a)
            logp[e, n] = lp
        all_actions.append(actions)
    rec = dict(obs=o, ids=ids, masks=masks, void_ok=void_ok, slot=slot, alloc=alloc, m=m, active=active, logp=logp,
               value=values.cpu().numpy().astype(np.float64), margin=margin, slot_ok=slot_ok, alloc_ok=own)
    if cells is not None:
        rec["cells"] = cells
    return all_actions, rec


def decision_records(envs: list, ids: np.ndarray, masks: np.ndarray, slot: np.ndarray, m: np.ndarray,
                     lay: EnvLayout, *, generic: bool, slot_ok: np.ndarray | None = None,
                     cell_features: str = "v1") -> dict[str, np.ndarray]:
    """What an update reads of a joint decision beyond its actions, from the states' masks (E,
    N, P, C+1, G+1), pending ids (E, N, P), the chosen slots (E, N; P = void) and the winners m
    (E, N): "slot_ok" (E, N, P: the slots with an allowed allocation; ``slot_ok`` when the
    caller has it), "alloc_ok" (E, N, grid: each agent's chosen slot's allowed cells; void
    picks: the last slot's, unused) and, for generic inputs, "cells" (the winners' compact cell
    features of the set ``cell_features``, :func:`winner_cells`). The one builder of these
    records: the MAPPO rollout (:func:`act_batch`) and the expert's replay
    (``train_tapfinger.replay_expert``, behaviour cloning and DAgger) both call it, with the env
    in the state decided on."""
    E, N, P = len(envs), lay.n, lay.pending_size
    flat = masks.reshape(E, N, P, -1)
    own = flat[np.arange(E)[:, None], np.arange(N)[None, :], np.minimum(slot, P - 1)]
    rec = {"slot_ok": flat.any(-1) if slot_ok is None else slot_ok, "alloc_ok": own}
    if generic:
        rec["cells"] = winner_cells(envs, ids, slot, m, own, lay, cell_features=cell_features)
    return rec


def winner_cells(envs: list, ids: np.ndarray, slot: np.ndarray, m: np.ndarray, own: np.ndarray,
                 lay: EnvLayout, *, cell_features: str = "v1") -> np.ndarray:
    """Generic inputs: the allocation head's cell features of the winners' allowed cells only,
    float32 (K, F) -- the agents that won their task (m = 1) in (env, agent) order, each one's
    allowed cells (``own`` (E, N, grid): its chosen slot's mask) in grid order: the compact
    ``cells`` of :meth:`alloc_head` (and the rollout buffer's, :func:`cell_offsets`). The
    features are the set ``cell_features`` (``ModelConfig.cell_features``); "v2"'s relative
    features take each winner's allowed cells as their reference set."""
    G1 = lay.max_gpu + 1
    parts = [np.zeros((0, len(CELL_FEATURE_SETS[cell_features])), dtype=np.float32)]
    for e, n in zip(*np.nonzero(m)):
        c, g = np.divmod(np.flatnonzero(own[e, n]), G1)
        parts.append(envs[e].cell_features_at(int(n), int(ids[e, n, slot[e, n]]), c, g, version=cell_features))
    return np.concatenate(parts)


def cell_offsets(batch: dict) -> np.ndarray:
    """Where each (sample, agent) row's cells start in a rollout batch's compact ``cells`` (the
    records of :func:`act_batch` concatenated in sample order): int64 (B * N + 1,), from the
    winners (``m``) and their allowed cells (``alloc_ok``); cached in the batch."""
    off = batch.get("cell_offsets")
    if off is None:
        counts = (batch["alloc_ok"].sum(-1) * (batch["m"] > 0)).reshape(-1)
        off = batch["cell_offsets"] = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return off


def batch_cells(batch: dict, idx: np.ndarray) -> np.ndarray:
    """The compact cells (K, F) of the samples ``idx`` of a rollout batch (their winners in (sample,
    agent) order): what :func:`act_batch` gave those samples' allocation heads."""
    off = cell_offsets(batch)
    N = batch["m"].shape[1]
    rows = (np.asarray(idx)[:, None] * N + np.arange(N)).reshape(-1)
    starts, counts = off[rows], off[rows + 1] - off[rows]
    take = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
    return batch["cells"][take]


def grid_cells(cells: np.ndarray, alloc_ok: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Compact cells (K, F) laid out on the grid: float32 alloc_ok.shape + (F,), the winners'
    (``m`` > 0) allowed cells (``alloc_ok``) in order, every other entry 0 (their logits are NEG
    and their gradients 0 either way)."""
    out = np.zeros(alloc_ok.shape + cells.shape[-1:], dtype=np.float32)
    out[alloc_ok & (m > 0)[..., None]] = cells
    return out


def full_cells(batch: dict, idx: np.ndarray) -> np.ndarray:
    """The samples' cells laid out on the grid, (B, N, grid, F) (:func:`grid_cells`), for the
    first path's :meth:`alloc_logits`."""
    return grid_cells(batch_cells(batch, idx), batch["alloc_ok"][idx], batch["m"][idx])


def bind_layout(model, lay: EnvLayout):
    """A generic model reads the instance it plays through that instance's own layout (its
    weights do not depend on it): set it (returns the model). A one-hot model's layout is fixed
    by its weights and stays."""
    if model.cfg.inputs == "generic":
        if lay.inputs != "generic":
            raise InputError("a generic model needs a generic layout (EnvLayout.inputs='generic')", field="inputs")
        for name, what in (("cross", "cross-cluster"), ("plan", "plan")):
            if getattr(lay, name) != getattr(model.lay, name):
                raise InputError(f"the model reads {getattr(model.lay, name)} {what} features per pending task, the "
                                 f"layout has {getattr(lay, name)}", field=f"layout.{name}")
        model.lay = lay
    return model


def generic_layout(env) -> EnvLayout:
    """The layout of a generic model playing ``env``'s instance (built with inputs='generic')."""
    if getattr(env, "task_inputs", "onehot") != "generic":
        raise InputError("a generic layout needs an env built with task_inputs='generic'", field="inputs")
    return EnvLayout.of_env(env)


def make_env(instance=None, *, lay: EnvLayout | None = None, preset: str = "synthetic-3",
             params: dict | None = None, variant: str | None = None, types: dict[str, str] | None = None,
             inputs: str | None = None, cross: bool | None = None, plan: bool | None = None):
    """The placement env for an instance (or a generator spec); with ``lay``, its running rows
    are those of the layout (checkpoint compatibility); with ``types`` (and ``lay``), every
    instance type is shown as the layout's type ``types[t]`` (:mod:`tapfinger_generic`).
    ``inputs``: the observation's task block, "onehot" or "generic" (default: the layout's, else
    "onehot"). ``cross``: the pending rows' cross-cluster features, ``plan`` their plan features
    (default: the layout's, else off)."""
    from edgebench.learned.envs.placement import PlacementParallelEnv

    kw: dict[str, Any] = {"variant": variant, "task_inputs": inputs or (lay.inputs if lay is not None else "onehot"),
                          "cross_features": bool(cross if cross is not None else (lay is not None and lay.cross)),
                          "plan_features": bool(plan if plan is not None else (lay is not None and lay.plan))}
    if types is not None and lay is not None:
        kw["type_view"] = (lay.type_names, types)
    if lay is not None:
        kw["max_running"] = lay.max_running
    if instance is not None:
        return PlacementParallelEnv(instance, **kw)
    return PlacementParallelEnv(preset=preset, params=params, **kw)


def check_layout(env, lay: EnvLayout, *, scaled: bool = False) -> None:
    """InputError unless the env's instance fits the model's layout (``scaled``: capacities
    beyond the grid are allowed, read on the scaled grid of :mod:`tapfinger_generic`). A generic
    layout fits every instance (it is rebuilt from the instance: :func:`generic_layout`)."""
    if lay.inputs == "generic":
        return
    caps = list(env._caps)
    if not scaled and any(c > lay.max_cpu or g > lay.max_gpu for c, g in caps):
        raise InputError(f"cluster capacities {caps} exceed the model's grid ({lay.max_cpu}, {lay.max_gpu})",
                         field="clusters")
    if len(caps) != lay.n:
        raise InputError(f"the model was trained for {lay.n} clusters, the instance has {len(caps)}",
                         field="clusters")
    if env.pending_size != lay.pending_size:
        raise InputError(f"the model's pending window is {lay.pending_size}, the instance's {env.pending_size}",
                         field="pending_size")
    if list(env.type_names) != list(lay.type_names):
        raise InputError(f"the model's task types are {lay.type_names}, the instance's {env.type_names}",
                         field="performance.types")


def run_episode(model, env, lay: EnvLayout, *, seed: int = 0, greedy: bool = True, instance=None,
                deadline: float | None = None, check_masks: bool = False, temperature: float = 1.0,
                record: list | None = None) -> dict[str, Any]:
    """Play one episode; returns {"done", "decisions", "objectives", "return", "mean_ct" (total
    tasks-in-system steps / tasks, = the mean completion time when done), "decisions_count",
    "decision_time" (mean seconds per joint decision), "timeout"}. ``temperature``: of sampled
    acting (:func:`act_batch`). ``record``: a list that receives, per joint decision, (the
    decision's record from :func:`act`, each agent's reward of the step)."""
    rng = np.random.default_rng(seed)
    opts = {"instance": instance} if instance is not None else None
    obs, _ = env.reset(seed=seed, options=opts)
    model = acting_model(model) if greedy else model.eval()
    ret = 0.0
    steps = 0
    t_act = 0.0
    margin = math.inf
    info: dict = {}
    while env.agents:
        if deadline is not None and time.perf_counter() > deadline:
            return {"done": False, "timeout": True, "decisions": None, "objectives": None}
        t0 = time.perf_counter()
        actions, rec = act(model, env, obs, lay, rng, greedy=greedy, values=False, temperature=temperature)
        t_act += time.perf_counter() - t0
        margin = min(margin, float(rec["margin"]))
        if check_masks:
            for a, x in actions.items():
                if not obs[a]["action_mask"][x]:
                    raise AssertionError(f"agent {a} took masked action {x}")
        obs, rew, terms, truncs, infos = env.step(actions)
        if record is not None:
            record.append((rec, np.array([rew.get(a, 0.0) for a in env.possible_agents])))
        ret += sum(rew.values())
        steps += 1
        info = next(iter(infos.values()))
    done = bool(info.get("objectives") is not None)
    num = env.sim.num_tasks
    mean_ct = info["objectives"]["mean_completion_time"] if done else -ret / num
    return {"done": done, "timeout": False, "decisions": info.get("decisions"), "objectives": info.get("objectives"),
            "return": ret, "mean_ct": float(mean_ct), "decisions_count": steps,
            "decision_time": t_act / max(steps, 1), "decision_margin": margin}


# ---- checkpoints ----------------------------------------------------------------------------


def save_checkpoint(path, model, lay: EnvLayout, *, extra: dict | None = None, optimizer=None) -> None:
    """Write a checkpoint (config, layout, weights, optional optimizer and training state) atomically."""
    blob = {"format": CHECKPOINT_FORMAT, "config": asdict(model.cfg), "layout": asdict(lay),
            "state_dict": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
            "extra": dict(extra or {})}
    if optimizer is not None:
        blob["optimizer"] = optimizer.state_dict()
    checkpoint.save_checkpoint(path, blob)


def load_checkpoint(path, *, pointer: str | None = None):
    """(model, layout, blob) from a checkpoint file, read as data only and checked (config
    types and :data:`CONFIG_BOUNDS`, weight names and shapes) before any weight is used
    (:mod:`edgebench.learned.checkpoint`); ``pointer="random"`` swaps in the no-pointer
    ablation's random task selection."""
    path = Path(path)
    blob = checkpoint.load_checkpoint(path, CHECKPOINT_FORMAT)
    cfg = checkpoint.config_from_dict(ModelConfig, blob.get("config"), file=path, field="checkpoint.config",
                                      defaults={"void_rule": "cluster", "conv": "gat"},  # defaults of format v1
                                      bounds=CONFIG_BOUNDS)
    if pointer is not None:
        cfg.pointer = pointer
    lay = checkpoint.config_from_dict(EnvLayout, blob.get("layout"), file=path, field="checkpoint.layout")
    if lay.inputs != cfg.inputs:
        raise InputError(f"the layout's inputs {lay.inputs!r} differ from the model's {cfg.inputs!r}", file=str(path),
                         field="checkpoint.layout.inputs")
    model = checkpoint.build_checked(lambda: make_model(cfg, lay), blob.get("state_dict"), file=path,
                                     field="checkpoint.state_dict")
    model.eval()
    return model, lay, blob


def _layout_of_file(path: Path) -> "EnvLayout":
    """A checkpoint's layout (read once per file version: the nearest-checkpoint rule asks for
    it per instance, from the runner's plan and again from the solver)."""
    st = Path(path).stat()
    return replace(_read_layout(str(path), st.st_size, st.st_mtime_ns))


@lru_cache(maxsize=64)
def _read_layout(path: str, size: int, mtime_ns: int) -> "EnvLayout":
    blob = checkpoint.load_checkpoint(path, CHECKPOINT_FORMAT)  # data only, checked
    return checkpoint.config_from_dict(EnvLayout, blob.get("layout"), file=path, field="checkpoint.layout")


def nearest_checkpoint(instance: Instance, prefix: str, directory: Path = CHECKPOINT_DIR):
    """The shipped checkpoint ``PREFIX-<preset>-<variant>.pt`` a solver uses for an instance:
    (path, match) or (None, reason). Candidates (those with a provenance sidecar) are tried in
    this order, the first whose layout fits the instance (:func:`check_layout`: cluster count,
    pending window, task types, capacities within the grid) wins: the instance's preset (from
    its generator meta; a converted instance, which has none, by its converter's name, e.g.
    ``alibaba`` for placement-alibaba-v2) and variant ("exact"), the same preset with the other
    variant, then every other preset with the instance's variant, then with the other variant (by name). A
    file with generic inputs fits every instance (it rebuilds its layout from the instance). A
    file whose sidecar says ``"fallback": false`` is a candidate only for its own preset's
    instances (a file trained on one trace's windows does not become every other preset's
    nearest by its name). When none fits, the reason names what each candidate lacks."""
    from edgebench.learned.provenance import checkpoint_records

    meta = instance.meta or {}
    preset = str(meta.get("preset") or meta.get("converter") or "")
    variant = instance.placement.variant
    recs = checkpoint_records(prefix, directory, sha=False)
    if not recs:
        return None, f"no shipped {prefix}-*.pt checkpoint"
    recs = [r for r in recs if r.get("fallback", True) or r["preset"] == preset]
    if not recs:
        return None, f"no shipped {prefix}-*.pt checkpoint plays {preset or 'this'} instances"
    recs.sort(key=lambda r: (r["preset"] != preset, r["variant"] != variant, r["file"]))
    env = make_env(instance)
    why = []
    for r in recs:
        path = directory / r["file"]
        lay = _layout_of_file(path)
        if lay.inputs != "generic":  # a generic file is type- and size-free: it plays every instance
            try:
                check_layout(env, lay)
            except InputError as exc:
                why.append(f"{r['file']}: {exc.reason}")
                continue
        exact = r["preset"] == preset and r["variant"] == variant
        return path, "exact" if exact else f"nearest ({r['preset']} {r['variant']})"
    for r in recs:  # no file reads it as is: the first with its cluster count and pending window, read generically
        lay = _layout_of_file(directory / r["file"])
        if lay.n == len(env._caps) and lay.pending_size == env.pending_size:
            return directory / r["file"], f"generic ({r['preset']} {r['variant']})"
    return None, "no shipped checkpoint fits this instance: " + "; ".join(why)


def generic_types(instance: Instance, lay: EnvLayout, checkpoint_file: Path) -> dict[str, str]:
    """The instance's task types mapped to the checkpoint's by performance features
    (:func:`tapfinger_generic.type_view`; the reference: the checkpoint's training preset,
    generator seed 0, from its provenance sidecar)."""
    from edgebench.instances.generators import generate
    from edgebench.learned.provenance import sidecar

    preset = sidecar(Path(checkpoint_file))["preset"]
    ref = generate("placement", preset, seed=0)
    return type_view(instance.placement, list(lay.type_names), ref.placement)[1]


# ---- registered solvers -----------------------------------------------------------------------

#: the most sampled episodes one solve may ask for (``samples``), and the highest temperature
MAX_SAMPLES = 10_000
MAX_TEMPERATURE = 10.0

_PARAMS = {"checkpoint": "path of a TapFinger checkpoint (.pt; default: the shipped one for the instance's "
                         "preset and variant, learned/checkpoints/)",
           "greedy": "bool, default True: argmax actions (False: sample with the solver seed)",
           "samples": f"int 0..{MAX_SAMPLES}, default 0: after the first episode (as `greedy` says), play this "
                      "many sampled episodes of the same policy (seeds from (seed, k)) and keep the schedule the "
                      "referee scores lowest; stops at the time limit with the best complete one",
           "temperature": f"float in (0, {MAX_TEMPERATURE:g}], default 1: sampled acting (`samples`, or `greedy` "
                          "false) draws from the softmax of the logits / temperature; below 1 nearer the greedy choice"}


def decode_options(params: dict) -> tuple[bool, int, float]:
    """(greedy, samples, temperature) of a solve's parameters, checked: an InputError naming
    ``params.<name>`` otherwise. The solvers' ``check`` (the runner calls it before any run) and
    the solve itself read the parameters through it."""
    greedy = params.get("greedy", True)
    if not isinstance(greedy, bool):
        raise InputError(f"must be a boolean, got {greedy!r}", field="params.greedy")
    samples = params.get("samples", 0)
    if isinstance(samples, bool) or not isinstance(samples, int) or not 0 <= samples <= MAX_SAMPLES:
        raise InputError(f"must be an integer in 0..{MAX_SAMPLES}, got {samples!r}", field="params.samples")
    temperature = params.get("temperature", 1.0)
    if (isinstance(temperature, bool) or not isinstance(temperature, (int, float))
            or not 0 < temperature <= MAX_TEMPERATURE):  # NaN fails the comparison too
        raise InputError(f"must be a number in (0, {MAX_TEMPERATURE:g}], got {temperature!r}",
                         field="params.temperature")
    return greedy, samples, float(temperature)


def _solve(name: str, instance: Instance, *, time_limit, seed: int, params: dict, prefix: str,
           pointer: str | None) -> Result:
    import torch

    started = time.perf_counter()
    unknown = sorted(set(params) - set(_PARAMS))
    if unknown:
        raise InputError(f"unknown parameter of solver {name!r} (known: {', '.join(_PARAMS)})",
                         field=f"params.{unknown[0]}")
    greedy, samples, temperature = decode_options(params)
    ckpt, match = params.get("checkpoint"), "given"
    if not ckpt:  # the shipped checkpoint nearest to the instance, or a clear refusal
        ckpt, match = nearest_checkpoint(instance, prefix)
        if ckpt is None:
            return make_result(instance, name, status="error", seed=seed, params=params, started=started,
                               stats={"reason": match})
    model, lay, _ = load_checkpoint(ckpt, pointer=pointer)  # validates the file first (InputError)
    sha = sha256_file(Path(ckpt))  # the run's record of the file it ran (the store's checkpoint column)
    if model.cfg.inputs == "generic":  # type- and size-free: the instance's own layout, no mapping
        env = make_env(instance, inputs="generic", cross=bool(lay.cross), plan=bool(lay.plan))
        lay = generic_layout(env)
        match += " (generic inputs)"
    else:
        generic = match.startswith("generic")
        env = make_env(instance, lay=lay, types=generic_types(instance, lay, ckpt) if generic else None)
        check_layout(env, lay, scaled=generic)
    deadline = None if time_limit is None else started + float(time_limit)
    with torch.no_grad():
        out = run_episode(model, env, lay, seed=int(seed), greedy=greedy, deadline=deadline, temperature=temperature)
    if out["timeout"]:
        return make_result(instance, name, status="timeout", seed=seed, params=params, started=started,
                           stats={"time_limit": time_limit, "checkpoint_sha256": sha})
    stats = {"checkpoint": Path(ckpt).name, "checkpoint_sha256": sha, "checkpoint_match": match,
             "decisions": out["decisions_count"],
             "ms_per_decision": 1000.0 * out["decision_time"]}
    if not out["done"]:
        stats["reason"] = "episode truncated before every task finished"
        return make_result(instance, name, status="error", seed=seed, params=params, started=started, stats=stats)
    decisions, value = out["decisions"], referee_value(instance, out["decisions"])
    if samples:
        stats["first_objective"] = value
        decisions, value, values = best_of_samples(model, env, lay, instance, seed=int(seed), samples=samples,
                                                    deadline=deadline, incumbent=(decisions, value),
                                                    temperature=temperature)
        stats["samples_played"] = len(values) - 1
        stats["best_sample"] = values.index(value)
        stats["sample_values"] = [None if math.isinf(v) else v for v in values]
    if not math.isfinite(value):
        stats["reason"] = "the referee rejects the episode's schedule"
        return make_result(instance, name, status="error", seed=seed, params=params, started=started, stats=stats)
    stats["mean_completion_time"] = value / len(instance.placement.tasks)
    return make_result(instance, name, status="feasible", decisions=decisions, seed=seed, params=params,
                       objective=value, started=started, stats=stats)


def referee_value(instance: Instance, decisions) -> float:
    """The referee's total completion time of an episode's decisions (inf when infeasible)."""
    ev = evaluate(instance, make_result(instance, "tapfinger", status="feasible", decisions=decisions).solution)
    return float(ev.objectives["total_completion_time"]) if ev.feasible else math.inf


def sample_seed(seed: int, k: int) -> int:
    """The seed of sampled episode ``k`` (1-based) of a solve with ``seed``."""
    return int(np.random.SeedSequence([int(seed), int(k)]).generate_state(1)[0])


def best_of_samples(model, env, lay: EnvLayout, instance: Instance, *, seed: int, samples: int,
                    deadline: float | None, incumbent: tuple,
                    temperature: float = 1.0) -> tuple[Any, float, list[float]]:
    """Sampling decode (:func:`edgebench.learned.sampling.best_of`): play ``samples`` sampled
    episodes (seeds :func:`sample_seed`) after the first one, ``incumbent`` = (decisions, referee
    value); (decisions, value, the referee value of every episode played, the first one first;
    inf for one that did not finish). Ties keep the earlier episode; an episode cut by the
    deadline is dropped. ``temperature``: of the sampled episodes (:func:`act_batch`)."""
    def play(k: int):  # (decisions, referee value); None when the deadline cut the episode
        out = run_episode(model, env, lay, seed=sample_seed(seed, k), greedy=False, deadline=deadline,
                          temperature=temperature)
        if out["timeout"]:
            return None
        return (out["decisions"], referee_value(instance, out["decisions"])) if out["done"] else (None, math.inf)

    got = best_of(tuple(incumbent), lambda episode: episode[1], play, samples, deadline=deadline)
    return got.best[0], got.score, got.scores


#: the registered TapFinger solvers: name -> (checkpoint prefix, pointer override, description)
SOLVERS = {
    "tapfinger": ("tapfinger-mappo", None, "TapFinger multi-agent policy (heterogeneous graph attention "
                  "encoder, pointer, Bayes conflicts) fine-tuned by MAPPO after a behaviour-cloning warm start"),
    "tapfinger-nograph": ("tapfinger-nograph-mappo", None, "TapFinger ablation (MAPPO-fine-tuned): MLP encoder "
                          "over concatenated features instead of the graph network"),
    "tapfinger-nopointer": ("tapfinger-mappo", "random", "TapFinger ablation (MAPPO-fine-tuned): random "
                            "pending-task selection (seeded) instead of the pointer network"),
    "tapfinger-bc": ("tapfinger-bc", None, "TapFinger policy by imitation only (behaviour cloning, some DAgger) "
                     "of the exact model placement-milp; no reinforcement learning"),
    "tapfinger-nograph-bc": ("tapfinger-nograph-bc", None, "TapFinger no-graph ablation by imitation only of "
                             "placement-milp"),
    "tapfinger-nopointer-bc": ("tapfinger-bc", "random", "TapFinger no-pointer ablation (random task order) with "
                               "the imitation-only full model's allocation head"),
    "tapfinger-generic-bc": ("tapfinger-generic-bc", None, "TapFinger network with type-generic inputs (task "
                             "features from the performance model, an allocation head over any cluster grid, v2 cell "
                             "features), by imitation only of placement-lns: each file plays every placement instance "
                             "as trained (the instance's preset's file first); no reinforcement learning"),
    "tapfinger-plan-bc": ("tapfinger-plan-bc", None, "TapFinger variant (not the paper's agents): the generic network "
                          "whose agents also see the step's shared list plan of the pending windows (placement-list-window: "
                          "planned here, planned here now, planned wait per pending task), by imitation only of "
                          "placement-list-window; no reinforcement learning"),
}


def _register(name: str, prefix: str, pointer: str | None, description: str) -> None:
    from edgebench.learned.provenance import checkpoints_of, training_summary

    def solve(instance: Instance, *, time_limit: float | None = None, seed: int = 0, **params: Any) -> Result:
        with one_torch_thread():
            return _solve(name, instance, time_limit=time_limit, seed=seed, params=params, prefix=prefix,
                          pointer=pointer)

    def applies(instance: Instance, params: dict[str, Any]) -> str | None:
        if params.get("checkpoint"):
            return None
        path, why = nearest_checkpoint(instance, prefix)
        return None if path is not None else why

    solve.__name__ = "solve_" + name.replace("-", "_")
    register(name, families=("placement",), kind="learned", params=_PARAMS, check=decode_options,
             description=f"{description} [{training_summary(prefix)}]",
             provenance=checkpoints_of(prefix), applies=applies)(solve)


for _name, (_prefix, _pointer, _desc) in SOLVERS.items():
    _register(_name, _prefix, _pointer, _desc)
