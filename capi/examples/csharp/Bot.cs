// A lockstep bot in C#: joins a lockstep-server room through liblockstep_c, pushes its body with
// seeded impulses once per tick, and counts the ticks whose hash the server confirmed.
//   mono Bot.exe PORT [SECONDS] [SEED]
// Prints one summary line; exit 0 when SECONDS of ticks were verified with no desync.
using System;
using Lockstep;

public static class Bot
{
    public static int Main(string[] args)
    {
        if (args.Length < 1)
        {
            Console.Error.WriteLine("usage: mono Bot.exe PORT [SECONDS] [SEED]");
            return 2;
        }
        ushort port = ushort.Parse(args[0]);
        int seconds = args.Length > 1 ? int.Parse(args[1]) : 10;
        ulong seed = args.Length > 2 ? ulong.Parse(args[2]) : 1;

        uint version = Native.lockstep_api_version();
        if (version / 10000 != 1)
        {
            Console.Error.WriteLine("liblockstep_c has API version " + version + ", not 1.x");
            return 1;
        }
        ClientOptions options;
        Native.lockstep_client_options_init(out options);
        IntPtr client;
        if (Native.lockstep_client_create(ref options, out client) != Status.Ok)
        {
            Console.Error.WriteLine("create: " + Native.LastError());
            return 1;
        }
        if (Native.lockstep_client_connect(client, "127.0.0.1", port, "csharp", "csharp_bot", "")
            != Status.Ok)
        {
            Console.Error.WriteLine("connect: " + Native.ClientError(client));
            return 1;
        }
        IntPtr confirmed;
        Native.lockstep_client_world(client, 0, out confirmed);

        var events = new ClientEvent[64];
        var owned = new BodyId[8];
        var inputs = new Input[1];
        ulong verified = 0, desyncs = 0, lastSent = 0, needed = 0, rng = seed;
        string ended = null;
        // Each poll waits at most 5 ms for the server; the read timeout of the client ends a
        // silent connection, so the loop ends on its own conditions (a bound keeps it finite).
        for (long polls = 0; ended == null && (needed == 0 || verified < needed) && polls < 200000;
             ++polls)
        {
            uint queued, count;
            Native.lockstep_client_poll(client, 5, out queued);
            while (Native.lockstep_client_take_events(client, events, (uint)events.Length,
                                                      out count) == Status.Ok && count > 0)
            {
                for (int i = 0; i < count; ++i)
                {
                    ClientEvent e = events[i];
                    if (e.Type == EventType.Joined) needed = (ulong)seconds * e.TickRateHz;
                    else if (e.Type == EventType.TickApplied) ++verified;
                    else if (e.Type == EventType.Desync)
                    {
                        ++desyncs;
                        Console.Error.WriteLine("desync at tick " + e.Tick);
                    }
                    else if (e.Type == EventType.Disconnected) ended = e.Text;
                }
            }
            ulong next;
            if (Native.lockstep_client_next_input_tick(client, out next) != Status.Ok ||
                next <= lastSent) continue;
            uint ownedCount;
            Native.lockstep_client_owned_bodies(client, owned, (uint)owned.Length, out ownedCount,
                                                IntPtr.Zero);
            if (ownedCount == 0) continue;
            // xorshift64: a push of up to 4 N·s per horizontal axis (fixed point, 2^10).
            rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
            inputs[0] = Input.For(owned[0]);
            inputs[0].LinearImpulse[0] = (int)(rng % 8193) - 4096;
            inputs[0].LinearImpulse[2] = (int)((rng >> 20) % 8193) - 4096;
            if (Native.lockstep_client_send_input(client, inputs, (UIntPtr)1, out lastSent)
                != Status.Ok) lastSent = next;
        }
        ClientStats stats;
        Native.lockstep_client_get_stats(client, out stats);
        ulong hash = 0, tick = 0;
        Native.lockstep_world_state_hash(confirmed, out hash);
        Native.lockstep_world_tick(confirmed, out tick);
        Native.lockstep_client_disconnect(client);
        Native.lockstep_client_destroy(client);
        bool ok = ended == null && needed > 0 && verified >= needed && desyncs == 0 &&
                  stats.Desyncs == 0 && stats.InputsSent > 0;
        Console.WriteLine("csharp_bot: verified=" + verified + " needed=" + needed +
                          " desyncs=" + stats.Desyncs + " inputs_sent=" + stats.InputsSent +
                          " tick=" + tick + " hash=" + hash.ToString("x16") +
                          (ended != null ? " disconnected=\"" + ended + "\"" : "") +
                          (ok ? " ok" : " FAILED"));
        return ok ? 0 : 1;
    }
}
