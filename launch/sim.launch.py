"""Start the contact_sim ROS 2 node (and robot_state_publisher for its robots).

    ros2 launch contact_sim sim.launch.py
    ros2 launch contact_sim sim.launch.py scene:=/path/scene.yaml time_mode:=sim_time use_sim_time:=true
    ros2 launch contact_sim sim.launch.py solver:=bisection params_file:=/path/params.yaml
    ros2 launch contact_sim sim.launch.py namespace:=sim_a      # every topic under /sim_a

Arguments: scene (scene YAML), solver (scene | pgs | bisection | vfpi | lstable | ecp | newton), time_mode (realtime | sim_time |
lockstep), use_sim_time (for the node; controllers that follow /clock set it themselves),
params_file (a `contact_sim_node: ros__parameters:` file, default config/contact_sim_node.params.yaml),
record_bag (a new directory: record a rosbag2 MCAP bag of every topic and command; empty = off),
namespace (the node's namespace: its topics, services, robot_description and tf follow it),
robot_state_publisher (true: start one per robot of the scene, when the package is installed).
The launch arguments override the parameter file. When the node exits (e.g. on a bad scene or
parameter) the launch shuts down; when launch is killed the node stops too (it asks the kernel for
SIGTERM on its parent's death). A params_file that does not exist stops the node with an error
naming it (launch_ros itself only warns and leaves it out: the node gets it again as
--require-params-file).

robot_state_publisher:=true (the default) includes robot_state_publishers.launch.py: one
robot_state_publisher per robot of the scene, each with its URDF from
`contact_sim_node --print-robot-description ROBOT` (a string parameter), publishing the links' TF
from the node's joint_states; the node itself publishes odom -> base (tf, tf_static) and
robot_description. With one robot it runs in the node's namespace; with several, one per robot in
`<namespace>/<robot>` (the default scene has two: quadruped and arm7). Its own copy of
robot_description is moved to `robot_state_publisher/robot_description` (the node's is the one to
use) and its /tf and /tf_static follow the namespace like the node's. When the package is not
installed it says so and goes on without it.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, Shutdown
from launch.conditions import IfCondition
from launch.launch_description_sources import PythonLaunchDescriptionSource
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
        DeclareLaunchArgument(
            "namespace",
            default_value="",
            description="Namespace of the node (its topics, services, robot_description and tf); empty = the root namespace",
        ),
        DeclareLaunchArgument(
            "robot_state_publisher",
            default_value="true",
            choices=["true", "false"],
            description="Start robot_state_publisher for the scene's robots (when it is installed)",
        ),
    ]
    node = Node(
        package="contact_sim",
        executable="contact_sim_node",
        name="contact_sim_node",
        namespace=LaunchConfiguration("namespace"),
        output="screen",
        emulate_tty=True,
        # launch_ros drops a params_file that does not exist with only a warning: the node checks it
        arguments=["--require-params-file", LaunchConfiguration("params_file")],
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
    # one robot_state_publisher per robot (shared with sim.launch.xml)
    robot_state_publishers = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(PathJoinSubstitution([share, "launch", "robot_state_publishers.launch.py"])),
        condition=IfCondition(LaunchConfiguration("robot_state_publisher")),
        launch_arguments={
            "scene": LaunchConfiguration("scene"),
            "namespace": LaunchConfiguration("namespace"),
            "use_sim_time": LaunchConfiguration("use_sim_time"),
        }.items(),
    )
    return LaunchDescription(arguments + [node, robot_state_publishers])
