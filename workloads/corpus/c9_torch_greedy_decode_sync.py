"""C9 sync stall (greedy decoding): batched greedy generation with a small decoder-only LM
(6 layers, d=512, 8 heads; the Llama-3 tokenizer's vocabulary of 128256, as a small draft
model sharing a large model's tokenizer has; no KV cache: the whole sequence is run again
for each new token, and the model returns logits for every position, as a HF-style
forward does), bf16 autocast under torch.inference_mode(). Each iteration generates 32 new tokens
for a batch of 32 prompts of 128 tokens. The loop is written like HF's greedy search:
min_new_tokens suppresses the end-of-sequence logit, finished sequences are padded, and
after every token `finished |= next_tok == eos` then `if finished.all(): break`: a Python
`if` on a GPU bool, one host wait per token, after which the host launches the next
forward from an empty queue. (With min_new_tokens = 32 the check never stops early, so
both variants generate the same tokens.)

--fix: gpuwhy's C9 advice (no Python control flow on GPU values every step): the same
check only every 8 tokens (`if t % 8 == 7 and finished.all()`), everything else as it was.
"""
import math

import torch
import torch.nn as nn

import cc

EOS, PAD = 2, 0


class DecoderLM(nn.Module):
    def __init__(self, vocab, d, heads, layers, max_len):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_len, d)
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.register_buffer("causal", nn.Transformer.generate_square_subsequent_mask(max_len), persistent=False)

    def forward(self, ids):
        t = ids.shape[1]
        h = self.tok(ids) * math.sqrt(self.tok.embedding_dim) + self.pos.weight[:t]
        h = self.blocks(h, mask=self.causal[:t, :t], is_causal=True)
        return self.lm_head(self.norm(h))  # logits for every position


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    batch, prompt_len, new_tokens, d, heads, layers, vocab = \
        (4, 16, 8, 64, 4, 2, 500) if args.smoke else (32, 128, 32, 512, 8, 6, 128256)
    min_new_tokens = new_tokens
    model = DecoderLM(vocab, d, heads, layers, prompt_len + new_tokens).to(dev).eval()
    g = torch.Generator().manual_seed(0)
    prompts = [torch.randint(3, vocab, (batch, prompt_len), generator=g).to(dev) for _ in range(4)]
    stats = {"generated": 0, "stopped_early": 0}

    @torch.inference_mode()
    def generate(ids):
        finished = torch.zeros(ids.shape[0], dtype=torch.bool, device=ids.device)
        for t in range(new_tokens):
            with torch.autocast(dev.type, dtype=torch.bfloat16):
                logits = model(ids)
            next_logits = logits[:, -1, :].float()
            if t < min_new_tokens:  # MinNewTokensLogitsProcessor
                next_logits[:, EOS] = -math.inf
            next_tok = next_logits.argmax(dim=-1)
            next_tok = torch.where(finished, torch.full_like(next_tok, PAD), next_tok)
            ids = torch.cat([ids, next_tok[:, None]], dim=1)
            finished |= next_tok == EOS
            if args.fix:
                if t % 8 == 7 and finished.all():
                    break
            elif finished.all():  # gpuwhy: plants C9 (a host wait on a GPU bool after every token)
                break
        return ids

    def step(i):
        out = generate(prompts[i % len(prompts)])
        stats["generated"] += out.shape[1] - prompt_len
        stats["stopped_early"] += out.shape[1] - prompt_len < new_tokens

    cc.run("c9_torch_greedy_decode_sync", args, step, batch, extra=lambda: dict(stats))


if __name__ == "__main__":
    main()
