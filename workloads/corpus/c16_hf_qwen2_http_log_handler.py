"""C16 feeding thread blocked on a socket (a blocking logging.handlers.HTTPHandler on the
training thread): pre-training a small Qwen2-style decoder (HF transformers Qwen2ForCausalLM
from a Qwen2Config: 12 layers of width 768, 12 query and 4 key/value heads, SwiGLU 2,048,
RMSNorm, rotary positions, a tied 32,000-token embedding; 100 M parameters, random, made on
the GPU; SDPA attention, no KV cache in training) with a plain PyTorch loop: batch 8 x 1,024
tokens (a token stream made once on the GPU), bf16 autocast, fused AdamW with warm-up and
cosine decay per step, gradient clipping at 1.0. Nothing is read from the GPU but the loss,
every 50 steps.

The script configures logging with the platform's standard dictConfig, which sends every
INFO record to the team's log collector through the standard library's
logging.handlers.HTTPHandler (POST to /ingest) besides a console handler for warnings; the
loop logs a progress line every step (step, learning rate, sequences per second by the host's
clock). HTTPHandler.emit opens a connection, posts the record and waits for the answer on the
thread that logs: the collector (a helper process forked before CUDA starts, 127.0.0.1 only,
answering each POST after 40 ms, the ingestion endpoint's latency) holds the training thread
in recv for 40 ms a step, longer than the GPU needs for the step's ~30 ms of work, so the GPU
runs out of queued kernels and waits while the thread that feeds it sleeps on a socket.

--fix: gpuwhy's C16 advice (do not block the feeding thread on something that is not the
GPU): the logging cookbook's remedy for handlers that block, a QueueHandler on the logger and
a QueueListener thread that runs the same HTTPHandler (records are posted in the background;
the listener is stopped, and the queue drained, after the timed part). Model, data, batch,
optimizer and what is logged unchanged.

Written blind for the juliet batch.
"""
import http.server
import logging
import logging.config
import logging.handlers
import math
import multiprocessing as mp
import queue
import time

import torch

import cc

LATENCY_S = 0.040  # the collector's answer to one POST


def collector(port_out):
    """The log collector's ingestion endpoint: answers every POST after LATENCY_S."""
    seen = {"records": 0}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            time.sleep(LATENCY_S)  # stored and indexed before the answer
            seen["records"] += 1
            body = b'{"status":"ok"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    http.server.ThreadingHTTPServer.daemon_threads = True
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler) as srv:
        port_out.send(srv.server_address[1])
        srv.serve_forever()


def logging_config(port):
    """The platform's standard logging setup: warnings on the console, INFO to the collector."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
        "handlers": {
            "console": {"class": "logging.StreamHandler", "level": "WARNING", "formatter": "plain"},
            "collector": {"class": "logging.handlers.HTTPHandler", "level": "INFO",
                          "host": f"127.0.0.1:{port}", "url": "/ingest", "method": "POST"},
        },
        "loggers": {"train": {"level": "INFO", "handlers": ["console", "collector"], "propagate": False}},
    }


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    server = ctx.Process(target=collector, args=(send,), daemon=True)   # forked before CUDA starts
    server.start()
    port = recv.recv()
    logging.config.dictConfig(logging_config(port))
    log = logging.getLogger("train")
    listener = None
    if args.fix:
        # the cookbook's "dealing with handlers that block": the same handlers behind a queue
        q = queue.SimpleQueue()
        listener = logging.handlers.QueueListener(q, *log.handlers, respect_handler_level=True)
        for h in list(log.handlers):
            log.removeHandler(h)
        log.addHandler(logging.handlers.QueueHandler(q))
        listener.start()

    from transformers import Qwen2Config, Qwen2ForCausalLM

    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        cfg = dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2)
        batch, seq = 2, 64
    else:
        cfg = dict(vocab_size=32_000, hidden_size=768, intermediate_size=2048, num_hidden_layers=12,
                   num_attention_heads=12, num_key_value_heads=4)
        batch, seq = 8, 1024
    config = Qwen2Config(**cfg, max_position_embeddings=2048, tie_word_embeddings=True, use_cache=False,
                         attn_implementation="sdpa")
    torch.manual_seed(0)
    with torch.device(dev):
        model = Qwen2ForCausalLM(config)
    model.train()
    total = 100_000
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=gpu)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 500) * 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))
    g = torch.Generator(device=dev).manual_seed(0)
    stream = torch.randint(0, config.vocab_size, (64 * batch, seq), device=dev, generator=g)
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0, "t": time.perf_counter(), "log_s": 0.0}

    def step(i):
        ids = stream[(i * batch) % stream.shape[0]:][:batch]
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu):
            out = model(input_ids=ids, labels=ids)
        opt.zero_grad(set_to_none=True)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        st["acc"] += out.loss.detach()
        now = time.perf_counter()
        t0 = now
        log.info("step %d lr %.3e seq/s %.1f", i, sched.get_last_lr()[0], batch / max(now - st["t"], 1e-9))  # gpuwhy: plants C16 (HTTPHandler waits 40 ms for the collector)
        st["log_s"] += time.perf_counter() - t0
        st["t"] = now
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1
            log.info("step %d loss %.4f", i, st["loss"])

    try:
        cc.run("c16_hf_qwen2_http_log_handler", args, step, batch,
               extra=lambda: {"log_handler": "QueueHandler" if args.fix else "HTTPHandler",
                              "collector_latency_ms": LATENCY_S * 1e3, "log_call_s": round(st["log_s"], 3),
                              "tokens_per_step": batch * seq, "loss": st["loss"], "loss_reads": st["reads"],
                              "params_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 1)})
    finally:
        if listener is not None:
            listener.stop()
        server.terminate()


if __name__ == "__main__":
    main()
