"""Start the contact_sim ROS 2 node.

    ros2 launch contact_sim sim.launch.py
    ros2 launch contact_sim sim.launch.py scene:=/path/scene.yaml time_mode:=sim_time use_sim_time:=true
    ros2 launch contact_sim sim.launch.py solver:=bisection params_file:=/path/params.yaml

Arguments: scene (scene YAML), solver (scene | pgs | bisection | vfpi | lstable | ecp | newton), time_mode (realtime | sim_time |
lockstep), use_sim_time (for the node; controllers that follow /clock set it themselves),
params_file (a `contact_sim_node: ros__parameters:` file, default config/contact_sim_node.params.yaml),
record_bag (a new directory: record a rosbag2 MCAP bag of every topic and command; empty = off).
The launch arguments override the parameter file. When the node exits (e.g. on a bad scene or
parameter) the launch shuts down; when launch is killed the node stops too (it asks the kernel for
SIGTERM on its parent's death).
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, Shutdown
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare


def generate_launch_description():
    share = FindPackageShare("contact_sim")
    arguments = [
        DeclareLaunchArgument(
            "scene",
            default_value=PathJoinSubstitution([share, "config", "default.yaml"]),
            description="Scene file (YAML)",
        ),
        DeclareLaunchArgument(
            "solver",
            default_value="scene",
            choices=["scene", "pgs", "bisection", "vfpi", "lstable", "ecp", "newton"],
            description="Contact solver (scene: the scene's own)",
        ),
        DeclareLaunchArgument(
            "time_mode",
            default_value="realtime",
            choices=["realtime", "sim_time", "lockstep"],
            description="realtime (wall clock), sim_time (publishes /clock) or lockstep (one step per command)",
        ),
        DeclareLaunchArgument(
            "use_sim_time",
            default_value="false",
            choices=["true", "false"],
            description="use_sim_time of the node",
        ),
        DeclareLaunchArgument(
            "record_bag",
            default_value="",
            description="Record a rosbag2 (MCAP) bag of all published topics and received commands into this new directory; empty = off",
        ),
        DeclareLaunchArgument(
            "params_file",
            default_value=PathJoinSubstitution([share, "config", "contact_sim_node.params.yaml"]),
            description="Parameter file (contact_sim_node: ros__parameters: ...)",
        ),
    ]
    node = Node(
        package="contact_sim",
        executable="contact_sim_node",
        name="contact_sim_node",
        output="screen",
        emulate_tty=True,
        # the node failing (bad scene, bad parameters) ends the launch instead of leaving it idle
        on_exit=Shutdown(reason="contact_sim_node exited"),
        parameters=[
            LaunchConfiguration("params_file"),
            {
                "scene": ParameterValue(LaunchConfiguration("scene"), value_type=str),
                "solver": ParameterValue(LaunchConfiguration("solver"), value_type=str),
                "time_mode": ParameterValue(LaunchConfiguration("time_mode"), value_type=str),
                "use_sim_time": ParameterValue(LaunchConfiguration("use_sim_time"), value_type=bool),
                "record_bag": ParameterValue(LaunchConfiguration("record_bag"), value_type=str),
            },
        ],
    )
    return LaunchDescription(arguments + [node])
