#!/usr/bin/env python3
"""Runs a lockstep scene through the C API (liblockstep_c) with ctypes and prints its hash chain:
the same `tick hash` lines as `lockstep-sim --scene SCENE --ticks N --every K`.

    python3 lockstep_sim.py --lib path/to/liblockstep_c.so --scene pile --ticks 600 --every 60

SCENE is a built-in scene name or a scene file; the file's `at tick=N` lines are applied as
lockstep-sim applies them. Scenes whose bodies players own are driven there by a test input
script that the C API does not carry, so their chains differ.
"""
import argparse
import ctypes
import os
import sys

LOCKSTEP_OK = 0


class BodyId(ctypes.Structure):
    _fields_ = [("index1", ctypes.c_uint32), ("generation", ctypes.c_uint32)]


class Input(ctypes.Structure):
    _fields_ = [("player", ctypes.c_uint32), ("sequence", ctypes.c_uint32), ("body", BodyId),
                ("linear_impulse", ctypes.c_int32 * 3), ("angular_impulse", ctypes.c_int32 * 3),
                ("buttons", ctypes.c_uint32), ("flags", ctypes.c_uint32),
                ("linear_velocity", ctypes.c_int32 * 3), ("angular_velocity", ctypes.c_int32 * 3)]


class Command(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int32), ("sequence", ctypes.c_uint32),
                ("template_index", ctypes.c_uint32), ("position", ctypes.c_float * 3),
                ("orientation", ctypes.c_float * 4), ("linear_velocity", ctypes.c_float * 3),
                ("angular_velocity", ctypes.c_float * 3), ("owner_player", ctypes.c_uint32),
                ("body", BodyId), ("score_delta", ctypes.c_int32)]


class StepResult(ctypes.Structure):
    _fields_ = [("tick", ctypes.c_uint64), ("state_hash", ctypes.c_uint64),
                ("overflow", ctypes.c_uint32), ("commands_rejected", ctypes.c_uint32),
                ("inputs_rejected", ctypes.c_uint32), ("first_error", ctypes.c_int32)]


def load(path):
    lib = ctypes.CDLL(path)
    world_pp = ctypes.POINTER(ctypes.c_void_p)
    lib.lockstep_api_version.restype = ctypes.c_uint32
    lib.lockstep_last_error.restype = ctypes.c_char_p
    lib.lockstep_world_last_error.restype = ctypes.c_char_p
    lib.lockstep_world_last_error.argtypes = [ctypes.c_void_p]
    for name, args in {
        "lockstep_world_create_builtin": [ctypes.c_char_p, world_pp],
        "lockstep_world_create_from_scene_file": [ctypes.c_char_p, world_pp],
        "lockstep_world_destroy": [ctypes.c_void_p],
        "lockstep_world_step": [ctypes.c_void_p, ctypes.POINTER(Command), ctypes.c_size_t,
                                ctypes.POINTER(Input), ctypes.c_size_t,
                                ctypes.POINTER(StepResult)],
        "lockstep_world_scene_actions": [ctypes.c_void_p, ctypes.c_uint64,
                                         ctypes.POINTER(Command), ctypes.c_uint32,
                                         ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(Input),
                                         ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint32)],
        "lockstep_world_state_hash": [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64)],
    }.items():
        fn = getattr(lib, name)
        fn.argtypes = args
        fn.restype = ctypes.c_int32
    return lib


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", required=True, help="path of liblockstep_c")
    parser.add_argument("--scene", required=True)
    parser.add_argument("--ticks", type=int, required=True)
    parser.add_argument("--every", type=int, default=60)
    args = parser.parse_args()

    lib = load(args.lib)
    # The library must speak the major version this script was written for.
    if lib.lockstep_api_version() // 10000 != 1:
        sys.exit("lockstep_sim.py: liblockstep_c has API version %d, not 1.x"
                 % lib.lockstep_api_version())
    world = ctypes.c_void_p()
    if os.path.exists(args.scene):
        status = lib.lockstep_world_create_from_scene_file(args.scene.encode(), ctypes.byref(world))
    else:
        status = lib.lockstep_world_create_builtin(args.scene.encode(), ctypes.byref(world))
    if status != LOCKSTEP_OK:
        sys.exit("lockstep_sim.py: %s: %s" % (args.scene, lib.lockstep_last_error().decode()))

    # Buffers made once, as a game would: the step itself allocates nothing.
    capacity = 256
    commands = (Command * capacity)()
    inputs = (Input * capacity)()
    n_commands = ctypes.c_uint32()
    n_inputs = ctypes.c_uint32()
    result = StepResult()
    hash_value = ctypes.c_uint64()
    if args.ticks == 0:
        lib.lockstep_world_state_hash(world, ctypes.byref(hash_value))
        print("0 %016x" % hash_value.value)
    for tick in range(1, args.ticks + 1):
        status = lib.lockstep_world_scene_actions(world, tick, commands, capacity,
                                                  ctypes.byref(n_commands), inputs, capacity,
                                                  ctypes.byref(n_inputs))
        if status != LOCKSTEP_OK:
            sys.exit("lockstep_sim.py: " + lib.lockstep_world_last_error(world).decode())
        status = lib.lockstep_world_step(world, commands, n_commands.value, inputs,
                                         n_inputs.value, ctypes.byref(result))
        if status != LOCKSTEP_OK:
            sys.exit("lockstep_sim.py: " + lib.lockstep_world_last_error(world).decode())
        if tick % args.every == 0 or tick == args.ticks:
            print("%d %016x" % (result.tick, result.state_hash))
    lib.lockstep_world_destroy(world)


if __name__ == "__main__":
    main()
