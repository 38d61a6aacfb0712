"""The cluster configs in deploy/ are valid for the installed Ray (its schema and its own validation,
as `ray up` runs them, without launching anything), open nothing to the world, and a mistyped key fails."""

import copy
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ["deploy/cluster.yaml", "deploy/onprem.yaml"]


def validate(config: dict) -> dict:
    """What `ray up` does before it touches a machine: defaults filled, local node types prepared, then
    `validate_config` against ray/autoscaler/ray-schema.json and Ray's own checks."""
    from ray.autoscaler._private.util import prepare_config, validate_config

    full = prepare_config(copy.deepcopy(config))
    validate_config(full)
    return full


@pytest.mark.parametrize("path", CONFIGS)
def test_cluster_configs_validate_against_the_installed_rays_schema(path):
    config = yaml.safe_load((ROOT / path).read_text())
    full = validate(config)
    assert full["head_node_type"] in full["available_node_types"]
    setup = " ".join(full["setup_commands"])
    assert "redis-server" in setup and "deploy/install.sh" in setup  # the project, its deps and Redis
    for command in full["head_start_ray_commands"]:
        if "ray start --head" in command:
            assert "--dashboard-host=127.0.0.1" in command
            assert "learner" in command or "learner" in str(config.get("available_node_types", {}))


@pytest.mark.parametrize("path", CONFIGS)
@pytest.mark.parametrize("mistake", ["misspelled key", "wrong type", "wrong structure"])
def test_a_broken_copy_fails_validation(path, mistake):
    import jsonschema

    config = yaml.safe_load((ROOT / path).read_text())
    if mistake == "misspelled key":
        config["setup_comands"] = config.pop("setup_commands")
    elif mistake == "wrong type":
        config["idle_timeout_minutes"] = "ten"
    elif config["provider"]["type"] == "local":
        config["provider"]["worker_ips"] = "192.168.0.11"  # a string, not a list
    else:  # a head type that is not among the node types
        config["head_node_type"] = "head.tpu"
    with pytest.raises((jsonschema.ValidationError, ValueError, KeyError)):
        validate(config)


def test_the_cloud_cluster_opens_no_port_to_the_world():
    """Ray's AWS launcher creates a security group with SSH open to 0.0.0.0/0 unless every node type names
    its own group: ours do, and no rule of ours admits the world."""
    config = yaml.safe_load((ROOT / "deploy/cluster.yaml").read_text())
    for node_type in config["available_node_types"].values():
        assert node_type["node_config"]["SecurityGroupIds"], node_type
    assert "0.0.0.0/0" not in (ROOT / "deploy/cluster.yaml").read_text()
    assert "security_group" not in config["provider"]


@pytest.mark.parametrize("path", CONFIGS)
def test_every_node_and_driver_uses_token_authentication(path):
    """Ray 2.60 turns token authentication on by default for local clusters only: our configs turn it on for
    every `ray start` and every driver, with the token the user generated once, copied to each node."""
    config = yaml.safe_load((ROOT / path).read_text())
    assert config["file_mounts"]["~/.ray/auth_token"] == "~/.ray/auth_token"
    starts = [c for c in config["head_start_ray_commands"] + config["worker_start_ray_commands"] if "ray st" in c]
    assert starts and all(c.startswith("export RAY_AUTH_MODE=token ") for c in starts), starts
    assert any("export RAY_AUTH_MODE=token' >> ~/.bashrc" in c for c in config["setup_commands"])
    assert any("chmod 600 ~/.ray/auth_token" in c for c in config["setup_commands"])


def test_the_on_premise_head_runs_the_autoscaler_that_starts_local_workers():
    """Ray 2.60's default autoscaler (v2) never starts a `local` provider's workers; v1 does (seen by
    launching onprem.yaml over SSH on two network namespaces of one machine)."""
    config = yaml.safe_load((ROOT / "deploy/onprem.yaml").read_text())
    (head,) = [c for c in config["head_start_ray_commands"] if "ray start --head" in c]
    assert "RAY_enable_autoscaler_v2=0" in head
