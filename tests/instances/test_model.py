"""Instance model: validation rules, immutability, hashing."""

import copy

import pytest
from pydantic import ValidationError

from edgebench.errors import InputError
from edgebench.instances.io import content_hash, instance_from_dict


def placement_dict():
    return {
        "format_version": 1, "family": "placement", "id": "p", "name": "tiny",
        "placement": {
            "clusters": [{"capacity": {"cpu": 8, "gpu": 4}}, {"capacity": {"cpu": 4, "gpu": 2}}],
            "tasks": [
                {"arrival": 0, "type": "ic", "minimum": {"cpu": 2, "gpu": 1}, "eligible": [0, 1]},
                {"arrival": 1, "type": "lm", "minimum": {"cpu": 2, "gpu": 1}, "eligible": [1]},
            ],
            "performance": {"kind": "synthetic", "types": {"ic": {"base": 0.25}, "lm": {"gpu_scale": 16}}},
        },
    }


def mapping_dict():
    return {
        "format_version": 1, "family": "mapping", "id": "m",
        "mapping": {
            "nodes": [{"cpu": 100, "ram": 100, "bg_cpu": 10}, {"cpu": 50, "ram": 80}],
            "links": [{"src": 0, "dst": 1, "bandwidth": 200}, {"src": 1, "dst": 0, "bandwidth": 200}],
            "jobs": [{"tasks": [{"cpu": 10, "ram": 10}, {"cpu": 20, "ram": 5}],
                      "links": [{"src": 0, "dst": 1, "bw_min": 10, "bw_max": 50}]}],
        },
    }


def offloading_dict():
    return {
        "format_version": 1, "family": "offloading", "id": "o",
        "offloading": {
            "servers": [{"cpu": 4, "mem": 4, "images": ["a"]}, {"is_cloud": True, "speed": 4}],
            "distance": [[0, 10], [10, 0]],
            "workflows": [{"tasks": [{"functions": [{"image": "a", "cpu": 1, "mem": 1, "exec_time": 2}]},
                                     {"functions": [{"image": "b", "cpu": 1, "mem": 1, "exec_time": 1}]}],
                           "edges": [{"src": 0, "dst": 1, "data": 5}]}],
        },
    }


@pytest.mark.parametrize("make", [placement_dict, mapping_dict, offloading_dict])
def test_valid_instances_load_and_hash_stably(make):
    a = instance_from_dict(make())
    b = instance_from_dict(make())
    assert a == b
    assert content_hash(a) == content_hash(b) == a.content_hash()
    assert len(a.content_hash()) == 64


def test_instances_are_immutable():
    inst = instance_from_dict(placement_dict())
    with pytest.raises(ValidationError):
        inst.id = "other"
    with pytest.raises(ValidationError):
        inst.placement.clusters[0].capacity.cpu = 99
    assert isinstance(inst.placement.tasks, tuple)


def test_hash_changes_with_content():
    d = placement_dict()
    h = content_hash(instance_from_dict(d))
    d["placement"]["tasks"][0]["arrival"] = 2
    assert content_hash(instance_from_dict(d)) != h


def mutate(d, path, value):
    d = copy.deepcopy(d)
    node = d
    for k in path[:-1]:
        node = node[k]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return d


BAD = [
    (placement_dict, ("family",), "cloud", "family", "unknown family"),
    (placement_dict, ("format_version",), 2, "format_version", "unsupported format_version"),
    (placement_dict, ("placement", "clusters", 0, "capacity", "cpu"), 0, "placement.clusters[0].capacity.cpu",
     "greater than 0"),
    (placement_dict, ("placement", "clusters", 0, "capacity", "gpu"), -1, "placement.clusters[0].capacity.gpu",
     "greater than 0"),
    (placement_dict, ("placement", "clusters", 0, "capacity", "cpu"), "8", "placement.clusters[0].capacity.cpu",
     "valid integer"),
    (placement_dict, ("placement", "tasks", 1, "eligible"), [5], "placement.tasks[1].eligible[0]", "does not exist"),
    (placement_dict, ("placement", "tasks", 1, "minimum", "gpu"), 3, "placement.tasks[1].minimum", "fits no eligible"),
    (placement_dict, ("placement", "tasks", 1, "type"), "zz", "placement.tasks[1].type", "unknown task type"),
    (placement_dict, ("placement", "colour"), "red", "placement.colour", "unknown field"),
    (placement_dict, ("placement", "noise"), 1.5, "placement.noise", "less than 1"),
    (mapping_dict, ("mapping", "links", 0, "dst"), 7, "mapping.links[0].dst", "does not exist"),
    (mapping_dict, ("mapping", "jobs", 0, "links", 0, "bw_max"), 5, "mapping.jobs[0].links[0].bw_max", "below bw_min"),
    (mapping_dict, ("mapping", "nodes", 0, "bg_cpu"), 100, "mapping.nodes[0].bg_cpu", "below the capacity"),
    (mapping_dict, ("mapping", "objective"), {"weights": [0.5, 0.5, 0.5]}, "mapping.objective.weights", "sum to 1"),
    (offloading_dict, ("offloading", "workflows", 0, "edges"), [{"src": 0, "dst": 1}, {"src": 1, "dst": 0}],
     "offloading.workflows[0].edges", "cyclic"),
    (offloading_dict, ("offloading", "distance"), [[0, 1]], "offloading.distance", "needs 2 rows"),
    (offloading_dict, ("offloading", "servers", 0, "cpu"), 0, "offloading.servers[0].cpu", "positive CPU"),
    (offloading_dict, ("offloading", "workflows", 0, "tasks", 0, "functions", 0, "cpu"), 5,
     "offloading.workflows[0].tasks[0].functions", None),
]


@pytest.mark.parametrize("make,path,value,field,reason", BAD)
def test_bad_input_names_field_and_reason(make, path, value, field, reason):
    d = mutate(make(), path, value)
    if make is offloading_dict and path[-1] == "cpu" and value == 5:
        # without the cloud, a task larger than every server is refused
        d["offloading"]["servers"] = d["offloading"]["servers"][:1]
        d["offloading"]["distance"] = [[0]]
        field, reason = "offloading.workflows[0].tasks[0].functions", "more than any server has"
    with pytest.raises(InputError) as err:
        instance_from_dict(d, file="x.json")
    e = err.value
    assert e.file == "x.json"
    assert e.field == field
    assert reason in e.reason
    assert str(e).startswith(f"x.json: {field}: ")


def test_wrong_payload_for_family():
    d = placement_dict()
    d["mapping"] = mapping_dict()["mapping"]
    with pytest.raises(InputError, match="must not carry"):
        instance_from_dict(d)
