// P/Invoke declarations of liblockstep_c (lockstep.h), the way a Unity plugin declares them: the
// library is found by its base name ("lockstep_c": liblockstep_c.so, lockstep_c.dll), every call
// is cdecl and returns a status, and every struct mirrors its C layout field for field.
using System;
using System.Runtime.InteropServices;
using System.Text;

namespace Lockstep
{
    public static class Status
    {
        public const int Ok = 0;
        public const int NotReady = 14;
    }

    public static class EventType
    {
        public const int Joined = 1;
        public const int TickApplied = 2;
        public const int Snapshot = 3;
        public const int Desync = 4;
        public const int Disconnected = 5;
        public const int Error = 6;
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct BodyId
    {
        public uint Index1;
        public uint Generation;
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct Input
    {
        public uint Player;
        public uint Sequence;
        public BodyId Body;
        [MarshalAs(UnmanagedType.ByValArray, SizeConst = 3)] public int[] LinearImpulse;
        [MarshalAs(UnmanagedType.ByValArray, SizeConst = 3)] public int[] AngularImpulse;
        public uint Buttons;
        public uint Flags;
        [MarshalAs(UnmanagedType.ByValArray, SizeConst = 3)] public int[] LinearVelocity;
        [MarshalAs(UnmanagedType.ByValArray, SizeConst = 3)] public int[] AngularVelocity;

        public static Input For(BodyId body)
        {
            return new Input
            {
                Body = body,
                LinearImpulse = new int[3],
                AngularImpulse = new int[3],
                LinearVelocity = new int[3],
                AngularVelocity = new int[3],
            };
        }
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct ClientOptions
    {
        public int Mode;
        public int Prediction;
        public uint MaxPredictionTicks;
        public int InputDelayTicks;
        public int AutoResync;
        public uint ConnectTimeoutMs;
        public uint ReadTimeoutMs;
        public uint EventCapacity;
        public IntPtr SceneName;
        public IntPtr ReplayDir;
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct ClientEvent
    {
        public ulong Tick;
        public ulong LocalHash;
        public ulong ServerHash;
        public ulong ConfirmedTick;
        public int Type;
        public int Code;
        public int Fatal;
        public int Resync;
        public uint PlayerId;
        public uint TickRateHz;
        public uint InputCount;
        public uint TicksResimulated;
        public uint CostUs;
        public uint TextTruncated;
        [MarshalAs(UnmanagedType.ByValArray, SizeConst = 256)] public byte[] TextBytes;

        public string Text
        {
            get
            {
                int n = Array.IndexOf(TextBytes, (byte)0);
                return Encoding.UTF8.GetString(TextBytes, 0, n < 0 ? TextBytes.Length : n);
            }
        }
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct ClientStats
    {
        public ulong TicksApplied;
        public ulong TicksVerified;
        public ulong Desyncs;
        public ulong Snapshots;
        public ulong Resyncs;
        public ulong Errors;
        public ulong InputsSent;
        public ulong TicksPredicted;
        public ulong Rollbacks;
        public ulong EventsDropped;
        public ulong RttSmoothedUs;
    }

    public static class Native
    {
        const string Lib = "lockstep_c";

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern uint lockstep_api_version();
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern uint lockstep_physics_revision();
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        static extern IntPtr lockstep_last_error();
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        static extern IntPtr lockstep_client_last_error(IntPtr client);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int lockstep_client_options_init(out ClientOptions options);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int lockstep_client_create(ref ClientOptions options, out IntPtr client);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int lockstep_client_destroy(IntPtr client);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int lockstep_client_connect(IntPtr client, string host, ushort port,
                                                         string room, string name, string token);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int lockstep_client_poll(IntPtr client, uint waitMs, out uint queued);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int lockstep_client_take_events(IntPtr client,
            [Out] ClientEvent[] events, uint capacity, out uint count);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int lockstep_client_owned_bodies(IntPtr client, [Out] BodyId[] ids,
                                                              uint capacity, out uint count,
                                                              IntPtr found);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int lockstep_client_next_input_tick(IntPtr client, out ulong tick);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int lockstep_client_send_input(IntPtr client, [In] Input[] inputs,
                                                            UIntPtr count, out ulong targetTick);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int lockstep_client_disconnect(IntPtr client);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int lockstep_client_world(IntPtr client, int which, out IntPtr world);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int lockstep_client_get_stats(IntPtr client, out ClientStats stats);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int lockstep_world_state_hash(IntPtr world, out ulong hash);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int lockstep_world_tick(IntPtr world, out ulong tick);

        public static string LastError()
        {
            return Marshal.PtrToStringAnsi(lockstep_last_error());
        }

        public static string ClientError(IntPtr client)
        {
            return Marshal.PtrToStringAnsi(lockstep_client_last_error(client));
        }
    }
}
