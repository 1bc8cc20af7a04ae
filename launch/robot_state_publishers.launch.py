"""One robot_state_publisher per robot of a contact_sim scene (included by sim.launch.py and sim.launch.xml).

    ros2 launch contact_sim robot_state_publishers.launch.py scene:=/path/scene.yaml [namespace:=sim_a] [use_sim_time:=true]

Arguments: scene (the scene the node runs), namespace (the node's namespace), use_sim_time.

Each robot's URDF comes from `contact_sim_node --scene SCENE --print-robot-description ROBOT`
(the robots from `--list-robots`), handed over as a string parameter (ParameterValue with
value_type=str: launch_ros would otherwise parse the URDF text as YAML). With one robot the
robot_state_publisher runs in the node's namespace; with several, one per robot in
`<namespace>/<robot>`. All read the node's `joint_states` and publish into the node's `tf` /
`tf_static`; their own copy of robot_description is moved to
`robot_state_publisher/robot_description` (the node's `robot_description` is the one to use).
When the robot_state_publisher package is not installed this says so and starts nothing.
"""

import subprocess

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, LogInfo, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import ExecutableInPackage


def _robot_state_publishers(context):
    """One robot_state_publisher per robot of the scene (when the package is installed)."""
    try:
        from ament_index_python.packages import get_package_share_directory

        get_package_share_directory("robot_state_publisher")
    except Exception:  # noqa: BLE001 - not installed (or no ament index)
        return [LogInfo(msg="robot_state_publisher is not installed: not started (the links have no TF; install ros-$ROS_DISTRO-robot-state-publisher)")]
    exe = ExecutableInPackage("contact_sim_node", "contact_sim").perform(context)
    scene = LaunchConfiguration("scene").perform(context)
    ns = LaunchConfiguration("namespace").perform(context).strip("/")
    sim_time = LaunchConfiguration("use_sim_time").perform(context) == "true"

    def run(*args):
        r = subprocess.run([exe, "--scene", scene, *args], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"contact_sim_node --scene {scene} {' '.join(args)}: {r.stderr.strip()}")
        return r.stdout

    robots = run("--list-robots").split()
    joint_states = f"/{ns}/joint_states" if ns else "/joint_states"
    tf_prefix = f"/{ns}" if ns else ""
    actions = []
    for robot in robots:
        robot_ns = ns if len(robots) == 1 else f"{ns}/{robot}".strip("/")
        actions.append(
            Node(
                package="robot_state_publisher",
                executable="robot_state_publisher",
                name="robot_state_publisher",
                namespace=robot_ns,
                output="screen",
                parameters=[{"robot_description": ParameterValue(run("--print-robot-description", robot), value_type=str), "use_sim_time": sim_time}],
                remappings=[
                    ("robot_description", "robot_state_publisher/robot_description"),
                    ("joint_states", joint_states),
                    ("/tf", f"{tf_prefix}/tf"),
                    ("/tf_static", f"{tf_prefix}/tf_static"),
                ],
            )
        )
    return actions


def generate_launch_description():
    return LaunchDescription(
        [
            DeclareLaunchArgument("scene", description="Scene file (YAML) of the contact_sim node"),
            DeclareLaunchArgument("namespace", default_value="", description="Namespace of the contact_sim node; empty = the root namespace"),
            DeclareLaunchArgument("use_sim_time", default_value="false", choices=["true", "false"], description="use_sim_time of the robot_state_publishers"),
            OpaqueFunction(function=_robot_state_publishers),
        ]
    )
