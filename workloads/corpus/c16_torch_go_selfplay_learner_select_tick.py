"""C16 the feeding thread waits in its event loop's select() (a self-play learner that ingests
games and trains in one loop): the learner of an AlphaZero / KataGo-style self-play pipeline
for 19 x 19 Go, in plain PyTorch. Self-play actors (here 8 helper processes forked before
CUDA starts, each standing for a worker that plays a game with its own search every 2-4 s)
connect to the learner over TCP (127.0.0.1) and send each finished game as one message: its
positions' 18 input planes bit-packed, the search's visit distribution over the 362 moves
(float16) and the game's result. The learner keeps a replay window of 262,144 positions on
the GPU (filled at start with the previous generation's games), samples batch 512 positions
from it each step and trains a residual policy-value network (a 3 x 3 stem and 10 residual
blocks of 128 channels with BatchNorm, a policy head to 362 logits and a value head with
tanh; 3.3 M parameters, random weights), bf16 autocast, channels_last, SGD with Nesterov
momentum (foreach), cross-entropy against the visit distribution plus the value's MSE; the
loss stays on the GPU and is read every 50 steps.

The learner is one loop that serves the actors and trains, written like a small socket
server: each iteration first looks for new games with `sel.select(timeout=0.05)` on the
listening socket and the actors' connections (selectors), ingests what arrived, then runs one
training step. Games arrive about 3 times a second, so nearly every select() waits its full
50 ms in epoll_wait with the thread asleep, while the GPU finishes the step it was given
(~13-22 ms of work) and then idles.

--fix: gpuwhy's C16 advice (move the blocking wait to a background thread): an ingest thread
owns the selector and blocks in select() until a game arrives, decodes it and hands it over a
queue.Queue; the training loop takes whatever games are queued (get_nowait) into the replay
window and trains without waiting; actors, games, window, sampling, model and optimizer
unchanged.

Written blind for the tango batch.
"""
import multiprocessing as mp
import queue
import selectors
import signal
import socket
import struct
import threading
import time

import numpy as np

import cc

BOARD, PLANES, MOVES = 19, 18, 19 * 19 + 1
TICK = 0.05


def pack_game(rng, n):
    """One synthetic game of n positions: bit-packed planes, visit distribution, result."""
    stones = rng.random((n, PLANES, BOARD * BOARD)) < np.linspace(0.05, 0.4, n)[:, None, None]
    stones[:, 16] = (np.arange(n) % 2 == 0)[:, None]                       # side to move
    stones[:, 17] = True                                                    # constant plane
    planes = np.packbits(stones.reshape(n, -1), axis=1)                    # (n, 813)
    visits = np.zeros((n, MOVES), np.float32)
    for k in range(n):
        idx = rng.choice(MOVES, 16, replace=False)
        visits[k, idx] = rng.dirichlet(np.full(16, 0.3))
    z = np.where(np.arange(n) % 2 == 0, 1, -1).astype(np.int8) * (1 if rng.random() < 0.5 else -1)
    body = struct.pack("<I", n) + planes.tobytes() + visits.astype(np.float16).tobytes() + z.tobytes()
    return struct.pack("<I", len(body)) + body


def unpack_game(body):
    n = struct.unpack_from("<I", body)[0]
    o = 4
    pb = (PLANES * BOARD * BOARD + 7) // 8
    planes = np.frombuffer(body, np.uint8, n * pb, o).reshape(n, pb)
    o += n * pb
    visits = np.frombuffer(body, np.float16, n * MOVES, o).reshape(n, MOVES)
    o += n * MOVES * 2
    z = np.frombuffer(body, np.int8, n, o)
    planes = np.unpackbits(planes, axis=1, count=PLANES * BOARD * BOARD).reshape(n, PLANES, BOARD, BOARD)
    return planes, visits, z


def actor(port, seed, game_s):
    """A self-play worker: a finished game every game_s seconds (its search stands in as a sleep)."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)                  # PR_SET_PDEATHSIG: die with the job
    except OSError:
        pass
    rng = np.random.default_rng(seed)
    games = [pack_game(rng, int(rng.integers(150, 260))) for _ in range(4)]
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    k = 0
    while True:
        time.sleep(rng.uniform(*game_s))
        s.sendall(games[k % len(games)])
        k += 1


def recv_exact(sock, n):
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        r = sock.recv_into(view[got:])
        if not r:
            raise ConnectionError("actor closed")
        got += r
    return bytes(buf)


class GameServer:
    """The learner's side of the actor connections: a listening socket and a selector."""

    def __init__(self, lsock):
        self.sel = selectors.DefaultSelector()
        self.lsock = lsock
        lsock.setblocking(False)
        self.sel.register(lsock, selectors.EVENT_READ, None)
        self.actors = 0

    def poll(self, timeout):
        """Games that arrived, waiting up to timeout (None: until one does)."""
        games = []
        for key, _ in self.sel.select(timeout=timeout):
            if key.data is None:                                            # a new actor
                conn, _ = self.lsock.accept()
                conn.setblocking(True)
                self.sel.register(conn, selectors.EVENT_READ, "actor")
                self.actors += 1
            else:
                try:
                    n = struct.unpack("<I", recv_exact(key.fileobj, 4))[0]
                    games.append(unpack_game(recv_exact(key.fileobj, n)))
                except ConnectionError:
                    self.sel.unregister(key.fileobj)
                    key.fileobj.close()
        return games


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    if args.smoke:
        n_actors, window, batch, blocks, width, game_s = 2, 4096, 16, 2, 32, (0.3, 0.6)
    else:
        n_actors, window, batch, blocks, width, game_s = 8, 262_144, 512, 10, 128, (2.0, 4.0)
    # the listening socket and the actors before CUDA starts (fork)
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(64)
    port = lsock.getsockname()[1]
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=actor, args=(port, 100 + a, game_s), daemon=True) for a in range(n_actors)]
    for p in procs:
        p.start()

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    server = GameServer(lsock)

    class ResBlock(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.c1, self.b1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
            self.c2, self.b2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

        def forward(self, x):
            y = F.relu(self.b1(self.c1(x)), inplace=True)
            return F.relu(x + self.b2(self.c2(y)), inplace=True)

    class PolicyValueNet(nn.Module):
        def __init__(self, blocks, c):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(PLANES, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU(inplace=True))
            self.tower = nn.Sequential(*[ResBlock(c) for _ in range(blocks)])
            self.p_conv = nn.Sequential(nn.Conv2d(c, 2, 1, bias=False), nn.BatchNorm2d(2), nn.ReLU(inplace=True))
            self.p_fc = nn.Linear(2 * BOARD * BOARD, MOVES)
            self.v_conv = nn.Sequential(nn.Conv2d(c, 1, 1, bias=False), nn.BatchNorm2d(1), nn.ReLU(inplace=True))
            self.v_fc = nn.Sequential(nn.Linear(BOARD * BOARD, 256), nn.ReLU(inplace=True), nn.Linear(256, 1))

        def forward(self, x):
            x = self.tower(self.stem(x))
            return self.p_fc(self.p_conv(x).flatten(1)), torch.tanh(self.v_fc(self.v_conv(x).flatten(1))).squeeze(1)

    # the replay window on the GPU, filled with the previous generation's games
    g = torch.Generator(device=dev).manual_seed(0)
    w_planes = torch.empty(window, PLANES, BOARD, BOARD, dtype=torch.uint8, device=dev)
    for s in range(0, window, 16_384):
        w_planes[s:s + 16_384] = torch.rand(min(16_384, window - s), PLANES, BOARD, BOARD, device=dev, generator=g) < 0.2
    w_planes[:, 17] = 1
    w_pi = torch.softmax(torch.randn(window, MOVES, device=dev, generator=g) * 3, 1).half()
    w_z = torch.randint(0, 2, (window,), device=dev, generator=g).float() * 2 - 1
    st = {"head": 0, "games": 0, "positions": 0, "acc": torch.zeros((), device=dev), "loss": None, "reads": 0}

    def add_game(game):
        planes, visits, z = game
        n = len(z)
        idx = (st["head"] + torch.arange(n)) % window
        idx = idx.to(dev)
        w_planes[idx] = torch.from_numpy(planes).to(dev)
        w_pi[idx] = torch.from_numpy(visits.copy()).to(dev)
        w_z[idx] = torch.from_numpy(z.astype(np.float32)).to(dev)
        st["head"] = (st["head"] + n) % window
        st["games"] += 1
        st["positions"] += n

    torch.manual_seed(0)
    model = PolicyValueNet(blocks, width).to(dev, memory_format=torch.channels_last).train()
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9, nesterov=True, weight_decay=1e-4, foreach=True)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)

    def train_step(i):
        idx = torch.randint(0, window, (batch,), device=dev, generator=g)
        x = w_planes[idx]
        flip = torch.rand((), device=dev, generator=g) < 0.5            # one of the board's symmetries
        x = torch.where(flip, x.transpose(2, 3), x).float().contiguous(memory_format=torch.channels_last)
        pi, z = w_pi[idx].float(), w_z[idx]
        pi = torch.where(flip, torch.cat([pi[:, :-1].view(-1, BOARD, BOARD).transpose(1, 2).reshape(-1, BOARD * BOARD),
                                          pi[:, -1:]], 1), pi)
        with amp:
            logits, v = model(x)
        loss = -(pi * F.log_softmax(logits.float(), 1)).sum(1).mean() + F.mse_loss(v.float(), z)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        st["acc"] += loss.detach()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    # the actors connect (accepted by these first polls) before training starts
    deadline = time.time() + 30
    while server.actors < n_actors and time.time() < deadline:
        for game in server.poll(timeout=0.5):
            add_game(game)

    if args.fix:
        # the advice: the blocking wait on the actors in a background thread
        inbox, stop = queue.Queue(), threading.Event()

        def ingest():
            while not stop.is_set():
                for game in server.poll(timeout=1.0):
                    inbox.put(game)

        threading.Thread(target=ingest, name="ingest", daemon=True).start()

        def step(i):
            while True:
                try:
                    add_game(inbox.get_nowait())
                except queue.Empty:
                    break
            train_step(i)
    else:
        def step(i):
            for game in server.poll(timeout=TICK):  # gpuwhy: plants C16 (the loop's select() waits its 50 ms tick for new games every step while the GPU idles)
                add_game(game)
            train_step(i)

    try:
        cc.run("c16_torch_go_selfplay_learner_select_tick", args, step, batch,
               extra=lambda: {"actors": n_actors, "select_timeout_s": None if args.fix else TICK,
                              "ingest_thread": bool(args.fix), "games_ingested": st["games"],
                              "positions_ingested": st["positions"], "params_m": round(params / 1e6, 2),
                              "loss": st["loss"], "loss_reads": st["reads"]})
    finally:
        if args.fix:
            stop.set()
        for p in procs:
            p.kill()
        for p in procs:
            p.join(timeout=3)


if __name__ == "__main__":
    main()
