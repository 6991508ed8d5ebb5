"""The project's Dockerfile builds what the deployment files expect: the build context holds every
file it copies, it installs what the Makefile installs (torch's CPU pin, Dagster's libraries without
their dependencies), the model's ONNX files are exported at build time where the image looks for
them, and it starts the code location the Helm values name. (No Docker daemon runs here: the build
itself is not run by the tests; see deploy/README.md.)"""

import fnmatch
import re
import shlex
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def stages() -> list[list[tuple[str, str]]]:
    """The Dockerfile's stages, each a list of (instruction, arguments), continuation lines joined."""
    text = re.sub(r"\\\n\s*", " ", (REPO / "Dockerfile").read_text())
    found: list[list[tuple[str, str]]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        instruction, _, arguments = line.partition(" ")
        if instruction.upper() == "FROM":
            found.append([])
        if found:
            found[-1].append((instruction.upper(), arguments.strip()))
    return found


def env_of(stage: list[tuple[str, str]]) -> dict[str, str]:
    env = {}
    for instruction, arguments in stage:
        if instruction == "ENV":
            env.update(item.split("=", 1) for item in shlex.split(arguments))
    return env


def ignored(path: str) -> bool:
    patterns = [p.strip() for p in (REPO / ".dockerignore").read_text().splitlines() if p.strip()[:1] not in ("", "#")]
    return any(fnmatch.fnmatch(path, p) or path.startswith(p.rstrip("/") + "/") or path == p for p in patterns)


def test_two_stages_and_the_last_keeps_only_the_environment_and_the_model_files():
    build, final = stages()
    assert build[0][1].endswith("AS build")
    copied = [args for instruction, args in final if instruction == "COPY" and args.startswith("--from=build")]
    assert copied == ["--from=build /opt/venv /opt/venv", "--from=build /opt/mind-harvest/onnx /opt/mind-harvest/onnx"]
    assert any(instruction == "USER" and args != "root" for instruction, args in final)


def test_every_file_it_copies_is_in_the_build_context():
    for stage in stages():
        for instruction, arguments in stage:
            if instruction != "COPY" or arguments.startswith("--from"):
                continue
            *sources, _target = arguments.split()
            for source in sources:
                assert (REPO / source).exists(), source
                assert not ignored(source), f"{source} is excluded by .dockerignore"
    for needed in ("mind_core/__init__.py", "plugins/__init__.py", "pipelines/definitions.py"):
        assert not ignored(needed)
    for private in (".venv", ".demo", ".cluster", "benchmarks/results"):
        assert ignored(private)


def test_it_installs_what_the_makefile_installs():
    build, _ = stages()
    runs = " ; ".join(args for instruction, args in build if instruction == "RUN")
    (torch_pin,) = set(re.findall(r"torch==[\d.]+", (REPO / "Makefile").read_text()))
    assert torch_pin in runs and "download.pytorch.org/whl/cpu" in runs
    assert "pip install --no-deps -r deploy/requirements-dagster.txt" in runs
    assert "pip install '.[s3]'" in runs  # the package itself, not editable; s3fs for the stores


def test_the_model_files_are_exported_where_the_image_reads_them():
    build, final = stages()
    runs = [args for instruction, args in build if instruction == "RUN"]
    assert "python -m mind_core.embeddings.onnx_export" in runs
    assert env_of(build)["MIND_HARVEST_ONNX_CACHE"] == env_of(final)["MIND_HARVEST_ONNX_CACHE"] == "/opt/mind-harvest/onnx"
    assert env_of(final)["HF_HUB_OFFLINE"] == "1"


def test_it_serves_the_code_location_the_helm_values_name():
    _, final = stages()
    (command,) = [args for instruction, args in final if instruction == "CMD"]
    argv = yaml.safe_load(command)
    values = yaml.safe_load((REPO / "deploy/k8s/values.yaml").read_text())
    (deployment,) = values["dagster-user-deployments"]["deployments"]
    assert argv[:3] == ["dagster", "api", "grpc"]
    assert argv[-4:] == deployment["dagsterApiGrpcArgs"]
    assert str(deployment["port"]) == argv[argv.index("-p") + 1]
    assert env_of(final)["MIND_HOME"] == "/minds"
