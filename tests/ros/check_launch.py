#!/usr/bin/env python3
"""Static checks of the launch and package files (launch / launch_ros are not on PyPI).

    python3 tests/ros/check_launch.py REPO_DIR

- launch/sim.launch.py compiles, and `generate_launch_description()` runs against minimal
  stand-ins of the launch / launch_ros APIs it uses; the Node action and its parameters are
  recorded;
- launch/sim.launch.xml parses; its arguments and parameters match the Python file's;
- config/contact_sim_node.params.yaml has the `contact_sim_node: ros__parameters:` form;
- package.xml is format 3, ament_cargo, with a valid maintainer e-mail.

Prints `RESULT {json}`; the Rust test compares the parameter names with the node's declared ones.
"""
import json
import py_compile
import re
import sys
import types
import xml.etree.ElementTree as ET
from pathlib import Path

import yaml


def stub_modules(recorded):
    """Minimal stand-ins for the launch API used by standard launch files."""

    class Substitution:
        def __init__(self, *args, **kwargs):
            self.args, self.kwargs = args, kwargs

        def __repr__(self):
            return f"{type(self).__name__}{self.args}"

    class LaunchConfiguration(Substitution):
        pass

    class PathJoinSubstitution(Substitution):
        pass

    class FindPackageShare(Substitution):
        pass

    class ParameterValue(Substitution):
        pass

    class ExecutableInPackage(Substitution):
        pass

    class LogInfo:
        def __init__(self, **kwargs):
            pass

    class OpaqueFunction:
        def __init__(self, function, **kwargs):
            recorded["opaque_functions"] = recorded.get("opaque_functions", []) + [function.__name__]

    class DeclareLaunchArgument:
        def __init__(self, name, default_value=None, description="", choices=None, **kwargs):
            recorded["arguments"][name] = {"default": repr(default_value), "choices": choices, "description": description}

    class Shutdown:
        def __init__(self, reason=None, **kwargs):
            self.reason = reason

        def __repr__(self):
            return "Shutdown"

    class LaunchDescription:
        def __init__(self, entities=()):
            recorded["entities"] = len(list(entities))

    class NodeAction:
        def __init__(self, *, package, executable, name=None, parameters=(), **kwargs):
            recorded["node"] = {"package": package, "executable": executable, "name": name, "kwargs": sorted(kwargs), "on_exit": repr(kwargs.get("on_exit")), "namespace": repr(kwargs.get("namespace"))}
            files, names = [], []
            for p in parameters:
                if isinstance(p, dict):
                    names.extend(p.keys())
                else:
                    files.append(repr(p))
            recorded["node"]["parameter_names"] = names
            recorded["node"]["parameter_files"] = files

    launch = types.ModuleType("launch")
    launch.LaunchDescription = LaunchDescription
    launch_actions = types.ModuleType("launch.actions")
    launch_actions.DeclareLaunchArgument = DeclareLaunchArgument
    launch_actions.Shutdown = Shutdown
    launch_actions.LogInfo = LogInfo
    launch_actions.OpaqueFunction = OpaqueFunction
    launch_subs = types.ModuleType("launch.substitutions")
    launch_subs.LaunchConfiguration = LaunchConfiguration
    launch_subs.PathJoinSubstitution = PathJoinSubstitution
    launch_ros = types.ModuleType("launch_ros")
    lr_actions = types.ModuleType("launch_ros.actions")
    lr_actions.Node = NodeAction
    lr_subs = types.ModuleType("launch_ros.substitutions")
    lr_subs.FindPackageShare = FindPackageShare
    lr_subs.ExecutableInPackage = ExecutableInPackage
    lr_pd = types.ModuleType("launch_ros.parameter_descriptions")
    lr_pd.ParameterValue = ParameterValue
    return {
        "launch": launch,
        "launch.actions": launch_actions,
        "launch.substitutions": launch_subs,
        "launch_ros": launch_ros,
        "launch_ros.actions": lr_actions,
        "launch_ros.substitutions": lr_subs,
        "launch_ros.parameter_descriptions": lr_pd,
    }


def main():
    repo = Path(sys.argv[1])
    out = {}

    # -- Python launch file ----------------------------------------------------------------------
    py = repo / "launch" / "sim.launch.py"
    py_compile.compile(str(py), doraise=True)
    recorded = {"arguments": {}}
    sys.modules.update(stub_modules(recorded))
    ns = {"__name__": "sim_launch"}
    exec(compile(py.read_text(), str(py), "exec"), ns)
    ns["generate_launch_description"]()
    out["py"] = recorded

    # -- XML launch file -------------------------------------------------------------------------
    root = ET.parse(repo / "launch" / "sim.launch.xml").getroot()
    assert root.tag == "launch", root.tag
    args = {a.get("name"): a.get("default") for a in root.findall("arg")}
    choices = {a.get("name"): [c.get("value") for c in a.findall("choice")] or None for a in root.findall("arg")}
    nodes = [n for n in root.findall("node") if n.get("pkg") == "contact_sim"]
    assert len(nodes) == 1, "one contact_sim node"
    n = nodes[0]
    rsp = [r for r in root.findall("node") if r.get("pkg") == "robot_state_publisher"]
    out["xml"] = {
        "arguments": args,
        "choices": choices,
        "node": {"pkg": n.get("pkg"), "exec": n.get("exec"), "name": n.get("name"), "on_exit": n.get("on_exit"), "namespace": n.get("namespace")},
        "robot_state_publisher": [{"if": r.get("if"), "namespace": r.get("namespace"), "params": {p.get("name"): p.get("value") for p in r.findall("param")}, "remaps": [[m.get("from"), m.get("to")] for m in r.findall("remap")]} for r in rsp],
        "parameter_names": [p.get("name") for p in n.findall("param") if p.get("name")],
        "parameter_files": [p.get("from") for p in n.findall("param") if p.get("from")],
    }

    # -- parameter file --------------------------------------------------------------------------
    doc = yaml.safe_load((repo / "config" / "contact_sim_node.params.yaml").read_text())
    assert list(doc) == ["contact_sim_node"], list(doc)
    params = doc["contact_sim_node"]["ros__parameters"]
    out["params_file"] = params

    # -- package.xml -----------------------------------------------------------------------------
    pkg = ET.parse(repo / "package.xml").getroot()
    email = pkg.find("maintainer").get("email")
    out["package"] = {
        "format": pkg.get("format"),
        "name": pkg.findtext("name"),
        "build_type": pkg.find("export").findtext("build_type"),
        "buildtool_depend": [e.text for e in pkg.findall("buildtool_depend")],
        "depends": [e.text for e in pkg.findall("depend")],
        "exec_depends": [e.text for e in pkg.findall("exec_depend")],
        "maintainer_email_valid": bool(re.fullmatch(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}", email or "")),
        "license": pkg.findtext("license"),
        "version": pkg.findtext("version"),
    }
    print("RESULT " + json.dumps(out))


if __name__ == "__main__":
    main()
