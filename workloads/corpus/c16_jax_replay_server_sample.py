"""C16 waiting on a slow partner (a synchronous sample request to a replay server): the learner
of a distributed DQN in plain JAX + optax, whose transitions live in a replay server (the
Reverb / Ape-X layout: actors insert, the learner samples), here a helper process forked
before JAX starts that holds 262,144 transitions (128-d float16 observations, 18 actions) and
answers a sample request over a Unix socket after 20 ms, the time a remote replay server's
prioritized sampling and the network take. The critic is a BRO-style wide residual MLP (an
input layer of width 4,096, three pre-LN residual blocks of two 4,096 x 4,096 layers, 18
action values; 101 M parameters in float32, bf16 matrix products), double DQN with a Polyak
target network (tau 0.005), Huber loss, AdamW, all in one jax.jit with the state donated;
batch 4,096 transitions; the loss stays on the device and is fetched every 50 steps.

The learner's loop is the simple one: ask the server for a batch, wait for the answer on the
socket, put it on the device, dispatch the step, ask for the next. JAX dispatches the step
asynchronously, so the GPU runs it while the thread waits on the socket for the next batch;
the GPU then waits for whatever of the 20 ms the step does not cover. The training thread is
asleep in recv, not on the CPU; the server is asleep too.

--fix: gpuwhy's C16 advice (run several requests to a slow partner and keep them in flight):
four sampler threads, each with its own connection to the server, keep four sample requests in
flight and hand the batches to the learner through a queue.Queue; server, latency, batch,
model and update unchanged.

Written blind for the hotel batch.
"""
import multiprocessing as mp
import queue
import socket
import struct
import threading
import time

import numpy as np

import cc

OBS, ACTIONS, CAPACITY = 128, 18, 262_144
CONNECTIONS = 4


def payload_bytes(batch):
    return batch * (2 * OBS * 2 + 4 + 4 + 4)


def replay_server(socks, theirs, capacity, latency):
    """One thread a connection: a request is (batch, seed); the answer, after `latency`
    seconds, the sampled transitions as raw bytes (obs, next_obs, action, reward, done)."""
    for s in theirs:  # the learner's ends, inherited by the fork
        s.close()
    rng = np.random.default_rng(0)
    obs = rng.standard_normal((capacity, OBS), np.float32).astype(np.float16)
    nxt = (obs.astype(np.float32) * 0.95 + 0.05 * rng.standard_normal((capacity, OBS), np.float32)).astype(np.float16)
    act = rng.integers(0, ACTIONS, capacity).astype(np.int32)
    rew = (obs[:, :ACTIONS].astype(np.float32)[np.arange(capacity), act] > 0).astype(np.float32)
    done = (rng.random(capacity) < 0.01).astype(np.float32)

    def serve(s):
        while True:
            req = b""
            while len(req) < 8:
                chunk = s.recv(8 - len(req))
                if not chunk:
                    return
                req += chunk
            batch, seed = struct.unpack("<II", req)
            time.sleep(latency)  # prioritized sampling and the network of a remote server
            idx = np.random.default_rng(seed).integers(0, capacity, batch)
            try:
                s.sendall(b"".join(a[idx].tobytes() for a in (obs, nxt, act, rew, done)))
            except OSError:  # the learner has gone
                return

    threads = [threading.Thread(target=serve, args=(s,), daemon=True) for s in socks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in socks:
        s.close()


def sample(sock, batch, seed, buf):
    """One synchronous request: send, then wait on the socket until the whole answer is in."""
    sock.sendall(struct.pack("<II", batch, seed))
    view = memoryview(buf)
    got = 0
    while got < len(buf):
        n = sock.recv_into(view[got:])
        if n == 0:
            raise SystemExit("replay server closed the connection")
        got += n
    o = 0
    out = []
    for dtype, shape in ((np.float16, (batch, OBS)), (np.float16, (batch, OBS)), (np.int32, (batch,)),
                         (np.float32, (batch,)), (np.float32, (batch,))):
        n = int(np.prod(shape)) * np.dtype(dtype).itemsize
        out.append(np.frombuffer(buf, dtype, offset=o, count=n // np.dtype(dtype).itemsize).reshape(shape).copy())
        o += n
    return out


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    width, blocks, batch, latency, capacity = \
        (64, 1, 64, 0.005, 4096) if args.smoke else (4096, 3, 4096, 0.020, CAPACITY)
    # the replay server, forked before JAX starts
    pairs = [socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(CONNECTIONS)]
    server = mp.get_context("fork").Process(target=replay_server, args=([b for _, b in pairs], [a for a, _ in pairs], capacity, latency),
                                            daemon=True)
    server.start()
    for _, b in pairs:
        b.close()
    socks = [a for a, _ in pairs]

    import jax
    import jax.numpy as jnp
    import optax

    if args.device == "cpu":
        dev = jax.devices("cpu")[0]
    else:
        try:
            dev = jax.devices("gpu")[0]
        except RuntimeError:
            raise SystemExit("no GPU for JAX: run with --device cpu for a smoke test")
    cdt = jnp.bfloat16

    def init(key):
        ks = iter(jax.random.split(key, 4 + 2 * blocks))
        dense = lambda i, o: {"w": jax.random.normal(next(ks), (i, o)) / np.sqrt(i), "b": jnp.zeros((o,))}  # noqa: E731
        return {"inp": dense(OBS, width),
                "blocks": [{"ln_s": jnp.ones((width,)), "ln_b": jnp.zeros((width,)),
                            "fc1": dense(width, width), "fc2": dense(width, width)} for _ in range(blocks)],
                "ln_s": jnp.ones((width,)), "ln_b": jnp.zeros((width,)),
                "out": dense(width, ACTIONS)}

    def lin(x, p):
        return jnp.dot(x.astype(cdt), p["w"].astype(cdt), preferred_element_type=jnp.float32) + p["b"]

    def ln(x, s, b):
        mu = x.mean(-1, keepdims=True)
        return (x - mu) * jax.lax.rsqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5) * s + b

    def q_values(p, obs):
        h = jax.nn.relu(lin(obs.astype(jnp.float32), p["inp"]))
        for b in p["blocks"]:
            h = h + lin(jax.nn.relu(lin(ln(h, b["ln_s"], b["ln_b"]), b["fc1"])), b["fc2"])
        return lin(ln(h, p["ln_s"], p["ln_b"]), p["out"])

    tx = optax.adamw(3e-4, weight_decay=1e-4)

    def loss_fn(p, target, obs, nxt, act, rew, done):
        q = jnp.take_along_axis(q_values(p, obs), act[:, None], 1)[:, 0]
        a_star = jnp.argmax(q_values(p, nxt), -1)
        q_next = jnp.take_along_axis(q_values(target, nxt), a_star[:, None], 1)[:, 0]
        y = jax.lax.stop_gradient(rew + 0.99 * (1.0 - done) * q_next)
        return optax.huber_loss(q, y).mean()

    def update(p, target, s, obs, nxt, act, rew, done):
        loss, g = jax.value_and_grad(loss_fn)(p, target, obs, nxt, act, rew, done)
        u, s = tx.update(g, s, p)
        p = optax.apply_updates(p, u)
        target = jax.tree.map(lambda t, q: 0.995 * t + 0.005 * q, target, p)
        return p, target, s, loss

    update = jax.jit(update, donate_argnums=(0, 1, 2))
    with jax.default_device(dev):
        params = init(jax.random.PRNGKey(0))
        target = jax.tree.map(jnp.copy, params)
        opt_state = tx.init(params)

    nbytes = payload_bytes(batch)
    counter = iter(range(1 << 30))
    q = queue.Queue(maxsize=2 * CONNECTIONS)

    def sampler(sock):
        buf = bytearray(nbytes)
        try:
            while True:
                q.put(sample(sock, batch, next(counter), buf))
        except OSError:  # the learner has finished and shut the connection
            return

    if args.fix:
        for s in socks:
            threading.Thread(target=sampler, args=(s,), daemon=True).start()
        next_batch = q.get
    else:
        buf0 = bytearray(nbytes)

        def next_batch():
            return sample(socks[0], batch, next(counter), buf0)  # gpuwhy: plants C16

    st = {"p": params, "t": target, "s": opt_state, "loss": None, "reads": 0}

    def step(i):
        b = [jax.device_put(a, dev) for a in next_batch()]
        st["p"], st["t"], st["s"], loss = update(st["p"], st["t"], st["s"], *b)
        if i % 50 == 49:
            st["loss"] = float(loss)
            st["reads"] += 1
        return loss

    cc.run("c16_jax_replay_server_sample", args, step, batch,
           extra=lambda: {"server_latency_ms": latency * 1e3, "requests_in_flight": CONNECTIONS if args.fix else 1,
                          "payload_kb": round(nbytes / 1024, 1), "loss": st["loss"], "loss_reads": st["reads"],
                          "server_alive": server.is_alive()})
    for s in socks:
        s.shutdown(socket.SHUT_RDWR)
        s.close()


if __name__ == "__main__":
    main()
