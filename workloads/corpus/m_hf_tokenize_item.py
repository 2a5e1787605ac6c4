"""C1+C9 (two causes): BERT sequence classification (HF transformers, random weights) whose
loop tokenizes each batch of raw text on the training thread with a `tokenizers` WordPiece
tokenizer (BERT-style normalization, padding to the batch's longest; TOKENIZERS_PARALLELISM=false,
as scripts set it to silence the fork warning) and logs loss.item()
and accuracy.item() every step.

--fix: tokenization moves into one DataLoader worker per free core (collate_fn; cc.fix_workers()), with pin_memory; the
metrics accumulate on the GPU and are read every 50 steps.
"""
import torch
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
from torch.utils.data import DataLoader, Dataset
from transformers import AutoModelForSequenceClassification, BertConfig

import cc


def build_tokenizer(lines):
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(lines, trainers.WordPieceTrainer(vocab_size=4000, special_tokens=["[PAD]", "[UNK]"]))
    return tok


class Texts(Dataset):
    def __init__(self, lines):
        self.lines = lines

    def __len__(self):
        return 1_000_000

    def __getitem__(self, i):
        return self.lines[i % len(self.lines)], i % 4


class Collate:
    def __init__(self, tok, max_len):
        self.tok = tok
        self.tok.enable_padding(pad_id=0, pad_token="[PAD]", pad_to_multiple_of=8)
        self.tok.enable_truncation(max_len)

    def __call__(self, items):
        enc = self.tok.encode_batch([t for t, _ in items])
        ids = torch.tensor([e.ids for e in enc])
        mask = torch.tensor([e.attention_mask for e in enc])
        return ids, mask, torch.tensor([y for _, y in items])


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    lines = cc.text_lines(4096, min_words=60, max_words=200)
    if args.smoke:
        cfg, batch = BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                                vocab_size=4000, num_labels=4), 4
    else:
        cfg, batch = BertConfig(num_hidden_layers=4, vocab_size=4000, num_labels=4), 64
    collate = Collate(build_tokenizer(lines), 256)
    model = AutoModelForSequenceClassification.from_config(cfg).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-5, fused=dev.type == "cuda")
    workers = (2 if args.smoke else cc.fix_workers()) if args.fix else 0  # gpuwhy: plants C1 (tokenization on the training thread)
    loader = DataLoader(Texts(lines), batch_size=batch, shuffle=True, collate_fn=collate, num_workers=workers,
                        pin_memory=args.fix, persistent_workers=workers > 0, prefetch_factor=4 if workers else None)
    it = iter(loader)
    sums = torch.zeros(2, device=dev)
    log = open("/dev/null", "w")

    def step(i):
        ids, mask, y = (t.to(dev, non_blocking=True) for t in next(it))
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            out = model(input_ids=ids, attention_mask=mask, labels=y)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        acc = (out.logits.argmax(-1) == y).float().mean()
        if args.fix:
            sums.add_(torch.stack([out.loss.detach().float(), acc]))
            if i % 50 == 0:
                print(i, *(sums / 50).tolist(), file=log)
                sums.zero_()
        else:
            print(i, out.loss.item(), acc.item(), file=log)  # gpuwhy: plants C9 (two reads every step)

    cc.run("m_hf_tokenize_item", args, step, batch)


if __name__ == "__main__":
    main()
