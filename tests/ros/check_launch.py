#!/usr/bin/env python3
"""Checks of the launch and package files, evaluating them the way launch / launch_ros do.

    python3 tests/ros/check_launch.py REPO_DIR [CONTACT_SIM_NODE]

The real `launch` / `launch_ros` packages are not on PyPI (the PyPI `launch` is another project),
so this file carries stand-ins of the parts of their APIs and semantics the launch files use:

- launch/sim.launch.py compiles; `generate_launch_description()` runs against stand-ins of the
  launch / launch_ros classes it uses, and the launch description is then *executed* in a
  stand-in launch context: arguments with their defaults and choices, substitutions performed
  (`FindPackageShare('contact_sim')` = REPO_DIR, `ExecutableInPackage('contact_sim_node', ...)` =
  CONTACT_SIM_NODE, the built binary), conditions, included launch files and OpaqueFunctions;
- launch/sim.launch.xml is evaluated the way launch_xml and launch_ros do: `$(var)`,
  `$(find-pkg-share)`, `$(exec-in-pkg)`, `$(command '...')` (run, as launch's Command
  substitution: a non-zero exit or any stderr output fails the launch), `<include>` with `if`,
  and `<param value=...>` coerced by its `type` or, without one, by YAML rules
  (launch.utilities.type_utils.coerce_to_type: `yaml.safe_load` of the text, whose result must
  be a bool, int, float, str or a uniform list; an empty string is null and fails);
- each Node's parameters are evaluated as launch_ros does (a ParameterValue with its value_type,
  a bare substitution by YAML rules, a plain value as it is), written into a parameter file as
  launch_ros writes it (`{'/**': {'ros__parameters': ...}}`) and handed with the node's
  remappings and namespace, as a command line, to a stand-in of the program: the stand-in
  robot_state_publisher reads its parameter file back and checks that `robot_description` is a
  string holding a well-formed URDF and `use_sim_time` a bool;
- config/contact_sim_node.params.yaml has the `contact_sim_node: ros__parameters:` form;
- package.xml is format 3, ament_cargo, with a valid maintainer e-mail.

Each launch file is evaluated on the default scene (two robots) with its default arguments, and
on a one-robot scene (tests/data/ros_arm.yaml) with `use_sim_time:=true namespace:=sim_a`,
without the robot_state_publisher package and with `robot_state_publisher:=false`; and with
`params_file:=/nonexistent/...`, where launch_ros leaves the missing file out of the command line
with a warning, the real contact_sim_node is run with the command line launch builds (it must
stop with an error naming the file, not run on its defaults).
Prints `RESULT {json}`; the Rust test (tests/ros_node.rs) asserts on it. An evaluation that fails
(as `ros2 launch` would) is reported in the result as `error`, not raised.
"""
import json
import os
import py_compile
import re
import shlex
import subprocess
import sys
import tempfile
import types
import xml.etree.ElementTree as ET
from pathlib import Path

import yaml


class LaunchError(Exception):
    """What `ros2 launch` would stop with."""


# -- launch semantics ------------------------------------------------------------------------------


def coerce_to_type(value, data_type=None):
    """launch.utilities.type_utils.coerce_to_type for the scalar types (str, int, float, bool, None)."""

    def as_yaml(what):
        try:
            out = yaml.safe_load(value)
        except yaml.YAMLError as e:
            raise LaunchError(f"{what}: yaml.safe_load() failed: {str(e).splitlines()[0]}") from None
        scalar = (bool, int, float, str)
        ok = isinstance(out, scalar) or (isinstance(out, list) and (not out or (type(out[0]) in scalar and all(type(x) is type(out[0]) for x in out))))
        if not ok:
            raise LaunchError(f"{what}: output type is not allowed, got {type(out)}")
        return out

    if not isinstance(value, str):
        raise LaunchError(f"coerce_to_type: {value!r} is not a string")
    if data_type is None:
        return as_yaml(f"Failed to convert '{value[:60]}' using yaml rules")
    if data_type is str:
        return value
    if data_type in (int, float):
        try:
            return data_type(value)
        except ValueError:
            raise LaunchError(f"cannot convert '{value}' to {data_type.__name__}") from None
    if data_type is bool:
        out = as_yaml(f"Failed to convert '{value}' to bool")
        if isinstance(out, bool):
            return out
        raise LaunchError(f"Cannot convert value '{value}' to bool")
    raise LaunchError(f"unsupported data type {data_type}")


XML_TYPES = {"str": str, "int": int, "float": float, "bool": bool}


class Context:
    """A stand-in LaunchContext: launch configurations and where packages are."""

    def __init__(self, configurations, repo, node_exe, installed):
        self.launch_configurations = dict(configurations)
        self.repo, self.node_exe, self.installed = repo, node_exe, installed

    def child(self, extra):
        c = Context(self.launch_configurations, self.repo, self.node_exe, self.installed)
        c.launch_configurations.update(extra)
        return c

    def package_share(self, pkg):
        if pkg == "contact_sim":
            return str(self.repo)
        if pkg in self.installed:
            return f"/opt/stand-in/share/{pkg}"
        raise LaunchError(f"package '{pkg}' not found")

    def executable(self, exe, pkg):
        if (pkg, exe) == ("contact_sim", "contact_sim_node"):
            if not self.node_exe:
                raise LaunchError("no contact_sim_node binary given")
            return self.node_exe
        raise LaunchError(f"executable '{exe}' of package '{pkg}' not found")


def run_command(ctx, command):
    """launch.substitutions.Command: shlex-split, run; a non-zero exit or stderr output fails."""
    argv = shlex.split(command)
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except FileNotFoundError as e:
        raise LaunchError(f"file not found: {e}") from None
    if r.returncode != 0:
        raise LaunchError(f"executed command failed. Command: {command}\nCaptured stderr output: {r.stderr.strip()}")
    if r.stderr:
        raise LaunchError(f"executed command showed stderr output. Command: {command}\nCaptured stderr output: {r.stderr.strip()}")
    return r.stdout


# -- Python launch API stand-ins -------------------------------------------------------------------


class Substitution:
    args = ()

    def __repr__(self):
        return f"{type(self).__name__}{self.args}"

    def perform(self, ctx):
        raise NotImplementedError


def perform(ctx, value):
    """perform_substitutions: a str, a Substitution or a list of them, into text."""
    if isinstance(value, str):
        return value
    if isinstance(value, Substitution):
        return value.perform(ctx)
    if isinstance(value, (list, tuple)):
        return "".join(perform(ctx, v) for v in value)
    raise LaunchError(f"not a substitution: {value!r}")


def is_substitution(value):
    return isinstance(value, Substitution) or (isinstance(value, (list, tuple)) and len(value) > 0 and all(isinstance(v, (str, Substitution)) for v in value) and any(isinstance(v, Substitution) for v in value))


class LaunchConfiguration(Substitution):
    def __init__(self, name, default=None):
        self.name, self.default, self.args = name, default, (name,)

    def perform(self, ctx):
        if self.name in ctx.launch_configurations:
            return ctx.launch_configurations[self.name]
        if self.default is not None:
            return perform(ctx, self.default)
        raise LaunchError(f"launch configuration '{self.name}' does not exist")


class PathJoinSubstitution(Substitution):
    def __init__(self, parts):
        self.parts, self.args = parts, (parts,)

    def perform(self, ctx):
        return os.path.join(*[perform(ctx, p) for p in self.parts])


class FindPackageShare(Substitution):
    def __init__(self, package):
        self.package, self.args = package, (package,)

    def perform(self, ctx):
        return ctx.package_share(perform(ctx, self.package))


class ExecutableInPackage(Substitution):
    def __init__(self, executable, package):
        self.executable, self.package, self.args = executable, package, (executable, package)

    def perform(self, ctx):
        return ctx.executable(perform(ctx, self.executable), perform(ctx, self.package))


class ParameterValue:
    """launch_ros.parameter_descriptions.ParameterValue."""

    def __init__(self, value, *, value_type=None):
        self.value, self.value_type = value, value_type
        self.args = (value, value_type)

    def __repr__(self):
        return f"ParameterValue({self.value!r}, value_type={getattr(self.value_type, '__name__', None)})"

    def evaluate(self, ctx):
        if isinstance(self.value, (bool, int, float, str)):
            # a plain value is kept as it is (normalize_typed_substitution: scalars resolve at once)
            if self.value_type is not None and not isinstance(self.value, self.value_type):
                raise LaunchError(f"value={self.value!r} is not an instance of {self.value_type}")
            return self.value
        return coerce_to_type(perform(ctx, self.value), self.value_type)


class IfCondition:
    def __init__(self, predicate):
        self.predicate = predicate

    def evaluate(self, ctx):
        v = perform(ctx, self.predicate).strip().lower()
        if v in ("true", "1"):
            return True
        if v in ("false", "0"):
            return False
        raise LaunchError(f"Unknown condition value '{v}': expected true, false, 1 or 0")


class DeclareLaunchArgument:
    def __init__(self, name, default_value=None, description="", choices=None, **kwargs):
        self.name, self.default_value, self.description, self.choices = name, default_value, description, choices


class LogInfo:
    def __init__(self, msg="", **kwargs):
        self.msg = msg


class OpaqueFunction:
    def __init__(self, function, **kwargs):
        self.function = function


class Shutdown:
    def __init__(self, reason=None, **kwargs):
        self.reason = reason

    def __repr__(self):
        return "Shutdown"


class PythonLaunchDescriptionSource:
    def __init__(self, path):
        self.path = path


class IncludeLaunchDescription:
    def __init__(self, source, condition=None, launch_arguments=(), **kwargs):
        self.source, self.condition, self.launch_arguments = source, condition, list(launch_arguments)


class LaunchDescription:
    def __init__(self, entities=()):
        self.entities = list(entities)


class NodeAction:
    """launch_ros.actions.Node (the arguments the launch files use)."""

    def __init__(self, *, package, executable, name=None, namespace=None, parameters=(), remappings=(), arguments=(), **kwargs):
        self.package, self.executable, self.name, self.namespace = package, executable, name, namespace
        self.parameters, self.remappings, self.arguments, self.kwargs = list(parameters or ()), list(remappings or ()), list(arguments or ()), kwargs


def stub_modules():
    mods = {}

    def mod(name, **attrs):
        m = types.ModuleType(name)
        for k, v in attrs.items():
            setattr(m, k, v)
        mods[name] = m

    mod("launch", LaunchDescription=LaunchDescription)
    mod("launch.actions", DeclareLaunchArgument=DeclareLaunchArgument, Shutdown=Shutdown, LogInfo=LogInfo, OpaqueFunction=OpaqueFunction, IncludeLaunchDescription=IncludeLaunchDescription)
    mod("launch.conditions", IfCondition=IfCondition)
    mod("launch.launch_description_sources", PythonLaunchDescriptionSource=PythonLaunchDescriptionSource)
    mod("launch.substitutions", LaunchConfiguration=LaunchConfiguration, PathJoinSubstitution=PathJoinSubstitution)
    mod("launch_ros")
    mod("launch_ros.actions", Node=NodeAction)
    mod("launch_ros.substitutions", FindPackageShare=FindPackageShare, ExecutableInPackage=ExecutableInPackage)
    mod("launch_ros.parameter_descriptions", ParameterValue=ParameterValue)
    return mods


def set_installed(installed):
    """ament_index_python stand-in: the packages in `installed` (besides contact_sim) exist."""

    def get_package_share_directory(pkg):
        if pkg == "contact_sim" or pkg in installed:
            return f"/opt/stand-in/share/{pkg}"
        raise LookupError(f"package '{pkg}' not found")

    m = types.ModuleType("ament_index_python")
    p = types.ModuleType("ament_index_python.packages")
    p.get_package_share_directory = get_package_share_directory
    sys.modules["ament_index_python"] = m
    sys.modules["ament_index_python.packages"] = p


def load_python_launch(path):
    py_compile.compile(str(path), doraise=True)
    ns = {"__name__": "launch_file", "__file__": str(path)}
    exec(compile(Path(path).read_text(), str(path), "exec"), ns)
    return ns["generate_launch_description"]()


# -- evaluating a launch description ---------------------------------------------------------------


def evaluate_parameters(ctx, parameters):
    """launch_ros.utilities.evaluate_parameters: files (paths) and dicts of evaluated values."""
    out = []
    for p in parameters:
        if isinstance(p, dict):
            d = {}
            for k, v in p.items():
                name = perform(ctx, k)
                if isinstance(v, ParameterValue):
                    d[name] = v.evaluate(ctx)
                elif is_substitution(v):
                    d[name] = coerce_to_type(perform(ctx, v), None)
                elif isinstance(v, (bool, int, float, str)):
                    d[name] = v
                else:
                    raise LaunchError(f"parameter {name}: unsupported value {v!r}")
            out.append(d)
        else:
            out.append(Path(perform(ctx, p)))
    return out


class Launch:
    """Executes launch entities in a stand-in context, collecting the processes it would start."""

    def __init__(self, repo, node_exe, installed, run_node=False):
        self.repo, self.node_exe, self.installed, self.run_node = repo, node_exe, installed, run_node
        self.processes, self.log = [], []

    def declare(self, ctx, name, default, choices):
        if name not in ctx.launch_configurations:
            if default is None:
                raise LaunchError(f"Included launch description missing required argument '{name}'")
            ctx.launch_configurations[name] = perform(ctx, default)
        if choices and ctx.launch_configurations[name] not in choices:
            raise LaunchError(f"Argument '{name}' provided value '{ctx.launch_configurations[name]}' is not valid. Valid options are: {choices}")

    def run_python(self, ctx, path):
        self.execute(ctx, load_python_launch(path).entities)

    def execute(self, ctx, entities):
        for e in entities:
            if isinstance(e, DeclareLaunchArgument):
                self.declare(ctx, e.name, e.default_value, e.choices)
            elif isinstance(e, NodeAction):
                self.start_node(ctx, e)
            elif isinstance(e, OpaqueFunction):
                self.execute(ctx, e.function(ctx) or [])
            elif isinstance(e, IncludeLaunchDescription):
                if e.condition is not None and not e.condition.evaluate(ctx):
                    continue
                args = {perform(ctx, k): perform(ctx, v) for k, v in e.launch_arguments}
                self.include(ctx, perform(ctx, e.source.path), args)
            elif isinstance(e, LogInfo):
                self.log.append(perform(ctx, e.msg))
            else:
                raise LaunchError(f"unsupported launch entity {type(e).__name__}")

    def include(self, ctx, path, args):
        child = ctx.child(args)
        if path.endswith(".py"):
            self.run_python(child, path)
        elif path.endswith(".xml"):
            self.run_xml(child, path)
        else:
            raise LaunchError(f"cannot include {path}")

    def start_node(self, ctx, n, params=None, remaps=None, namespace=None, arguments=None):
        """The command line launch_ros builds for a Node, and what the stand-in program makes of it
        (or, with `run_node`, what the real contact_sim_node does with it)."""
        ns = perform(ctx, n.namespace) if namespace is None and n.namespace is not None else (namespace or "")
        ns = "/" + ns.strip("/") if ns.strip("/") else "/"
        params = evaluate_parameters(ctx, n.parameters) if params is None else params
        remaps = [(perform(ctx, a), perform(ctx, b)) for a, b in n.remappings] if remaps is None else remaps
        arguments = [perform(ctx, a) for a in n.arguments] if arguments is None else arguments
        package = perform(ctx, n.package)
        exe = perform(ctx, n.executable)
        if package == "contact_sim" and self.run_node:
            exe = ctx.executable(exe, package)
        argv = [exe, *arguments, "--ros-args", "-r", f"__node:={perform(ctx, n.name)}", "-r", f"__ns:={ns}"]
        for p in params:
            if isinstance(p, dict):
                fd, path = tempfile.mkstemp(prefix="launch_params_", suffix=".yaml")
                with os.fdopen(fd, "w") as h:
                    yaml.dump({"/**": {"ros__parameters": p}}, h, default_flow_style=False)
                argv += ["--params-file", path]
            elif not os.path.isfile(str(p)):
                # launch_ros (Humble and later): a warning, and the file is left out
                self.log.append(f"[WARNING] [launch_ros.actions.node]: Parameter file path is not a file: {p}")
            else:
                argv += ["--params-file", str(p)]
        for a, b in remaps:
            argv += ["-r", f"{a}:={b}"]
        try:
            if package == "contact_sim" and self.run_node:
                self.processes.append({"package": package, **run_program(argv)})
            else:
                self.processes.append({"package": package, **stand_in(package, argv)})
        finally:
            for a, b in zip(argv, argv[1:]):
                if a == "--params-file" and os.path.basename(b).startswith("launch_params_"):
                    os.unlink(b)


# -- XML launch files (launch_xml + launch_ros frontend) --------------------------------------------


def split_args(body):
    """The arguments of a `$(name args...)` body: split on blanks outside quotes and nested $()."""
    out, cur, quote, depth, i = [], "", None, 0, 0
    while i < len(body):
        c = body[i]
        if quote:
            if c == quote:
                quote = None
            else:
                cur += c
        elif body.startswith("$(", i):
            depth += 1
            cur += "$("
            i += 2
            continue
        elif c == ")" and depth:
            depth -= 1
            cur += c
        elif c in "'\"" and not depth:
            quote = c
        elif c.isspace() and not depth:
            if cur:
                out.append(cur)
            cur = ""
        else:
            cur += c
        i += 1
    if quote:
        raise LaunchError(f"unterminated quote in $({body})")
    if cur:
        out.append(cur)
    return out


def xml_subst(ctx, text, launch, here):
    """launch.frontend.parse_substitution + perform for the substitutions the launch file uses."""
    out, i = "", 0
    while i < len(text):
        if text.startswith("$(", i):
            depth, quote, k = 0, None, i + 1
            while k < len(text):
                c = text[k]
                if quote:
                    quote = None if c == quote else quote
                elif c in "'\"":
                    quote = c
                elif c == "(":
                    depth += 1
                elif c == ")":
                    depth -= 1
                    if depth == 0:
                        break
                k += 1
            if k >= len(text):
                raise LaunchError(f"unterminated substitution in {text!r}")
            name, *args = split_args(text[i + 2 : k])
            args = [xml_subst(ctx, a, launch, here) for a in args]
            if name == "var":
                out += LaunchConfiguration(args[0]).perform(ctx)
            elif name == "find-pkg-share":
                out += ctx.package_share(args[0])
            elif name == "exec-in-pkg":
                out += ctx.executable(args[0], args[1])
            elif name == "command":
                out += run_command(ctx, args[0])
            elif name == "dirname":
                out += str(Path(here).parent)
            elif name == "env":
                out += os.environ.get(args[0], args[1] if len(args) > 1 else "")
            else:
                raise LaunchError(f"substitution $({name}) not supported by this checker")
            i = k + 1
        else:
            out += text[i]
            i += 1
    return out


def xml_condition(ctx, el, launch, here):
    for attr, want in (("if", True), ("unless", False)):
        if el.get(attr) is not None:
            if IfCondition(xml_subst(ctx, el.get(attr), launch, here)).evaluate(ctx) != want:
                return False
    return True


class XmlNode:
    def __init__(self, package, executable, name, namespace):
        self.package, self.executable, self.name, self.namespace = package, executable, name, namespace
        self.parameters, self.remappings, self.arguments = [], [], []


def run_xml(self, ctx, path):
    root = ET.parse(path).getroot()
    if root.tag != "launch":
        raise LaunchError(f"{path}: root element <{root.tag}>, expected <launch>")
    sub = lambda t: xml_subst(ctx, t, self, path)  # noqa: E731
    for el in root:
        if not xml_condition(ctx, el, self, path):
            continue
        if el.tag == "arg":
            choices = [c.get("value") for c in el.findall("choice")] or None
            default = el.get("default")
            self.declare(ctx, el.get("name"), None if default is None else sub(default), choices)
        elif el.tag == "let":
            ctx.launch_configurations[el.get("name")] = sub(el.get("value"))
        elif el.tag == "node":
            params = [{}]
            for p in el.findall("param"):
                if p.get("from") is not None:
                    params.insert(-1, Path(sub(p.get("from"))))
                else:
                    t = p.get("type")
                    if t is not None and t not in XML_TYPES:
                        raise LaunchError(f"param {p.get('name')}: unsupported type '{t}'")
                    params[-1][sub(p.get("name"))] = coerce_to_type(sub(p.get("value")), XML_TYPES.get(t))
            params = [p for p in params if not (isinstance(p, dict) and not p)]
            remaps = [(sub(m.get("from")), sub(m.get("to"))) for m in el.findall("remap")]
            n = XmlNode(sub(el.get("pkg")), sub(el.get("exec")), sub(el.get("name")), None)
            arguments = [sub(a) for a in split_args(el.get("args") or "")]
            self.start_node(ctx, n, params=params, remaps=remaps, namespace=sub(el.get("namespace") or ""), arguments=arguments)
        elif el.tag == "include":
            args = {a.get("name"): sub(a.get("value")) for a in el.findall("arg")}
            self.include(ctx, sub(el.get("file")), args)
        else:
            raise LaunchError(f"{path}: element <{el.tag}> not supported by this checker")


Launch.run_xml = run_xml


# -- the programs the launch starts (stand-ins reading their command line) -------------------------


def parse_ros_args(argv):
    """The `--ros-args` of a command line: node name, namespace, parameters (from the files, as rcl
    reads them), remappings."""
    got = {"node": None, "namespace": None, "params": {}, "param_files": [], "remaps": []}
    i = argv.index("--ros-args") + 1
    while i < len(argv):
        a = argv[i]
        if a == "-r":
            k, v = argv[i + 1].split(":=", 1)
            if k == "__node":
                got["node"] = v
            elif k == "__ns":
                got["namespace"] = v
            else:
                got["remaps"].append([k, v])
            i += 2
        elif a == "--params-file":
            f = argv[i + 1]
            got["param_files"].append(f)
            if not os.path.isfile(f):
                raise LaunchError(f"parameter file {f} does not exist")
            doc = yaml.safe_load(Path(f).read_text()) or {}
            for key, section in doc.items():
                if key in ("/**", got["node"], f"{(got['namespace'] or '').rstrip('/')}/{got['node']}"):
                    got["params"].update((section or {}).get("ros__parameters", {}))
            i += 2
        else:
            raise LaunchError(f"unexpected ROS argument {a}")
    return got


def run_program(argv, timeout=20.0):
    """Runs a program as launch would; `exit` is None when it was still running after `timeout`
    seconds (then stopped with SIGINT)."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=timeout)
        code = p.returncode
    except subprocess.TimeoutExpired:
        p.send_signal(2)
        try:
            out, err = p.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        code = None
    return {"executable": os.path.basename(argv[0]), "argv": argv[1:], "exit": code, "stderr": err[-4000:], "stdout": out[-2000:]}


def stand_in(package, argv):
    """What the started program gets; robot_state_publisher's stand-in checks its parameters as
    robot_state_publisher does (robot_description: a string with a URDF)."""
    got = parse_ros_args(argv)
    out = {"executable": os.path.basename(argv[0]), "node": got["node"], "namespace": got["namespace"], "remaps": got["remaps"], "param_files": got["param_files"]}
    params = got["params"]
    out["parameter_types"] = {k: type(v).__name__ for k, v in params.items()}
    if package == "robot_state_publisher":
        desc = params.get("robot_description")
        if not isinstance(desc, str):
            raise LaunchError(f"robot_state_publisher: robot_description is a {type(desc).__name__}, not a string")
        try:
            urdf = ET.fromstring(desc)
        except ET.ParseError as e:
            raise LaunchError(f"robot_state_publisher: robot_description is not XML: {e}") from None
        if urdf.tag != "robot" or not urdf.get("name"):
            raise LaunchError("robot_state_publisher: robot_description is not a URDF (<robot name=...>)")
        out["urdf_robot"] = urdf.get("name")
        out["urdf_links"] = len(urdf.findall("link"))
        out["use_sim_time"] = params.get("use_sim_time")
    else:
        out["parameters"] = {k: v for k, v in params.items() if k in ("scene", "solver", "time_mode", "use_sim_time", "record_bag")}
    return out


def evaluate(kind, repo, node_exe, overrides, installed=("robot_state_publisher",), run_node=False):
    """Runs sim.launch.{kind} with the launch arguments `overrides`; the processes it starts."""
    set_installed(installed)
    launch = Launch(repo, node_exe, installed, run_node)
    ctx = Context(overrides, repo, node_exe, installed)
    try:
        if kind == "py":
            launch.run_python(ctx, repo / "launch" / "sim.launch.py")
        else:
            launch.run_xml(ctx, repo / "launch" / "sim.launch.xml")
        return {"processes": launch.processes, "log": launch.log, "error": None}
    except (LaunchError, RuntimeError) as e:
        return {"processes": launch.processes, "log": launch.log, "error": f"{type(e).__name__}: {e}"}


# -- static summaries (arguments, parameters) ------------------------------------------------------


def py_summary(repo):
    desc = load_python_launch(repo / "launch" / "sim.launch.py")
    out = {"arguments": {}, "includes": []}
    for e in desc.entities:
        if isinstance(e, DeclareLaunchArgument):
            out["arguments"][e.name] = {"default": repr(e.default_value), "choices": e.choices, "description": e.description}
        elif isinstance(e, NodeAction):
            names = [k for p in e.parameters if isinstance(p, dict) for k in p]
            files = [repr(p) for p in e.parameters if not isinstance(p, dict)]
            out["node"] = {"package": e.package, "executable": e.executable, "name": e.name, "kwargs": sorted(e.kwargs), "on_exit": repr(e.kwargs.get("on_exit")), "namespace": repr(e.namespace), "arguments": [repr(a) if not isinstance(a, str) else a for a in e.arguments], "parameter_names": names, "parameter_files": files}
        elif isinstance(e, IncludeLaunchDescription):
            out["includes"].append({"file": repr(e.source.path), "condition": repr(e.condition.predicate) if e.condition else None, "arguments": sorted(k for k, _ in e.launch_arguments)})
    return out


def xml_summary(repo):
    root = ET.parse(repo / "launch" / "sim.launch.xml").getroot()
    assert root.tag == "launch", root.tag
    nodes = [n for n in root.findall("node") if n.get("pkg") == "contact_sim"]
    assert len(nodes) == 1, "one contact_sim node"
    n = nodes[0]
    return {
        "arguments": {a.get("name"): a.get("default") for a in root.findall("arg")},
        "choices": {a.get("name"): [c.get("value") for c in a.findall("choice")] or None for a in root.findall("arg")},
        "node": {"pkg": n.get("pkg"), "exec": n.get("exec"), "name": n.get("name"), "on_exit": n.get("on_exit"), "namespace": n.get("namespace"), "args": n.get("args")},
        "includes": [{"file": i.get("file"), "if": i.get("if"), "arguments": sorted(a.get("name") for a in i.findall("arg"))} for i in root.findall("include")],
        "other_nodes": [r.get("pkg") for r in root.findall("node") if r.get("pkg") != "contact_sim"],
        "parameter_names": [p.get("name") for p in n.findall("param") if p.get("name")],
        "parameter_types": {p.get("name"): p.get("type") for p in n.findall("param") if p.get("name")},
        "parameter_files": [p.get("from") for p in n.findall("param") if p.get("from")],
    }


def main():
    repo = Path(sys.argv[1]).resolve()
    node_exe = sys.argv[2] if len(sys.argv) > 2 else None
    sys.modules.update(stub_modules())
    out = {"py": py_summary(repo), "xml": xml_summary(repo)}

    # -- both launch files executed ----------------------------------------------------------------
    one_robot = {"scene": str(repo / "tests" / "data" / "ros_arm.yaml"), "use_sim_time": "true", "namespace": "sim_a"}
    out["runs"] = {}
    if node_exe:
        for kind in ("py", "xml"):
            out["runs"][kind] = {
                "default": evaluate(kind, repo, node_exe, {}),
                "one_robot": evaluate(kind, repo, node_exe, one_robot),
                "no_rsp_package": evaluate(kind, repo, node_exe, {}, installed=()),
                "rsp_off": evaluate(kind, repo, node_exe, {"robot_state_publisher": "false"}),
                # the real node started with the command line launch builds
                "missing_params_file": evaluate(kind, repo, node_exe, {"params_file": "/nonexistent/contact_sim.params.yaml", "robot_state_publisher": "false"}, run_node=True),
            }

    # -- parameter file --------------------------------------------------------------------------
    doc = yaml.safe_load((repo / "config" / "contact_sim_node.params.yaml").read_text())
    assert list(doc) == ["contact_sim_node"], list(doc)
    out["params_file"] = doc["contact_sim_node"]["ros__parameters"]

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
