"""``keygen``, ``sign``, ``verify``, ``encrypt`` and ``decrypt`` through ``main(argv)``.

Argon2id makes each password encryption or decryption cost a moment: the tests share
one password-encrypted file and encrypt sparingly.
"""

from __future__ import annotations

import functools
import stat
from collections.abc import Callable
from pathlib import Path

import click.testing
import pytest
from apr_bytes import layout_of, refresh_crcs
from cli_run import Run, flip_byte, invoke, one_error_line
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from zoo import assert_identical_outputs, iris

import aprender
from aprender.cli import _secrets, main
from aprender.format import apr
from aprender.linear_model import LogisticRegression

PASSWORD = "correct horse battery staple"


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., Run]:
    return functools.partial(invoke, capsys)


@pytest.fixture(scope="module")
def model() -> LogisticRegression:
    X, y = iris()
    return LogisticRegression(max_iter=1000).fit(X, y)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory, model: LogisticRegression) -> dict[str, Path]:
    """A compressed .apr model, key pairs, password files, and the model encrypted for the password."""
    folder = tmp_path_factory.mktemp("crypto")
    paths = {"apr": folder / "model.apr", "st": folder / "model.safetensors", "pw": folder / "pw.txt",
             "bad_pw": folder / "bad.txt"}
    aprender.save(model, paths["apr"], compression="zstd", metadata={"name": "iris"})
    aprender.save(model, paths["st"])
    paths["pw"].write_text(PASSWORD + "\nignored second line\n")
    paths["bad_pw"].write_text("wrong\n")
    for name, kind in (("signer", "ed25519"), ("other", "ed25519"), ("bob", "x25519"), ("eve", "x25519")):
        paths[name] = folder / name
        assert main(["keygen", "--type", kind, "--output", str(paths[name])]) == 0
        paths[name + ".pub"] = folder / f"{name}.pub"
    paths["enc"] = folder / "model-enc.apr"
    assert main(["encrypt", str(paths["apr"]), "-o", str(paths["enc"]), "--password-file", str(paths["pw"])]) == 0
    return paths


# -- keygen ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "cls"), [("ed25519", Ed25519PrivateKey), ("x25519", X25519PrivateKey)])
def test_keygen_writes_a_private_key_0600_and_a_public_key(cli, tmp_path: Path, kind: str, cls: type) -> None:
    name = tmp_path / "key"
    run = cli("keygen", "--type", kind, "--output", name, "--json")
    assert run.code == 0
    assert stat.S_IMODE(name.stat().st_mode) == 0o600
    private = serialization.load_pem_private_key(name.read_bytes(), password=None)
    public = serialization.load_pem_public_key((tmp_path / "key.pub").read_bytes())
    assert isinstance(private, cls)
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    assert raw == private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    assert run.json == {"type": kind, "private_key": str(name), "public_key": str(tmp_path / "key.pub"),
                        "public_key_hex": raw.hex()}


def test_keygen_never_overwrites_without_force(cli, tmp_path: Path) -> None:
    name = tmp_path / "key"
    (tmp_path / "key.pub").write_text("keep")
    run = cli("keygen", "--type", "ed25519", "-o", name)
    assert run.code == 2
    assert "key.pub' exists; pass --force" in one_error_line(run)
    assert not name.exists() and (tmp_path / "key.pub").read_text() == "keep"
    name.write_text("old")
    name.chmod(0o644)
    assert cli("keygen", "--type", "ed25519", "-o", name, "--force").code == 0
    assert stat.S_IMODE(name.stat().st_mode) == 0o600
    assert isinstance(serialization.load_pem_private_key(name.read_bytes(), None), Ed25519PrivateKey)


# -- sign / verify --------------------------------------------------------------------------


def test_sign_then_verify(cli, setup, model, tmp_path: Path) -> None:
    signed = tmp_path / "signed.apr"
    run = cli("sign", setup["apr"], "--key", setup["signer"], "--output", signed)
    assert run.code == 0
    public = serialization.load_pem_public_key(setup["signer.pub"].read_bytes())
    assert isinstance(public, Ed25519PublicKey)
    assert_identical_outputs(model, apr.load_verified(signed, public), iris()[0])
    info = aprender.inspect(signed)
    assert info.signed and info.compressed == "zstd" and info.metadata["user"] == {"name": "iris"}
    run = cli("verify", signed)
    assert run.code == 0
    assert "verified against the key embedded in the file" in run.out
    for key in ("signer.pub", "signer"):  # a private key file stands for its public key
        run = cli("verify", signed, "--key", setup[key], "--json")
        assert run.code == 0 and run.json["valid"] and run.json["key"] == "given"
    assert cli("validate", signed, "--key", setup["signer.pub"]).code == 0


def test_verify_failures(cli, setup, tmp_path: Path) -> None:
    signed = tmp_path / "signed.apr"
    cli("sign", setup["apr"], "--key", setup["signer"], "-o", signed)
    run = cli("verify", signed, "--key", setup["other.pub"])
    assert run.code == 1
    assert "does not verify (the file embeds a different public key)" in one_error_line(run)
    assert cli("validate", signed, "--key", setup["other.pub"]).code == 1
    tampered = flip_byte(signed, tmp_path / "tampered.apr", 200)
    run = cli("verify", tampered, "--json")
    assert run.code == 1 and run.json["error"]["type"] == "SignatureInvalid"
    run = cli("verify", setup["apr"])
    assert run.code == 1
    assert one_error_line(run) == (f"invalid: '{setup['apr']}': the file is not signed; there is no signature to "
                                   "verify [SignatureInvalid]")
    run = cli("verify", setup["st"])
    assert run.code == 1 and "safetensors files carry no signature" in one_error_line(run)
    run = cli("validate", setup["st"], "--key", setup["signer.pub"])
    assert run.code == 1 and "only .apr files are signed" in one_error_line(run)


def test_sign_needs_an_ed25519_key(cli, setup, tmp_path: Path) -> None:
    run = cli("sign", setup["apr"], "--key", setup["bob"], "-o", tmp_path / "s.apr")
    assert run.code == 2
    assert "holds an X25519 private key; this needs an Ed25519 private key" in one_error_line(run)
    run = cli("sign", setup["apr"], "--key", setup["signer.pub"], "-o", tmp_path / "s.apr")
    assert run.code == 2 and "holds an Ed25519 public key; this needs an Ed25519 private key" in one_error_line(run)
    run = cli("sign", setup["apr"], "--key", setup["pw"], "-o", tmp_path / "s.apr")
    assert run.code == 2 and "is not an unencrypted PEM private key" in one_error_line(run)
    run = cli("sign", setup["apr"], "--key", setup["signer"], "-o", tmp_path / "s.gguf")
    assert run.code == 2 and "has the suffix of gguf, not apr" in one_error_line(run)
    assert not list(tmp_path.iterdir())


# -- encrypt / decrypt ----------------------------------------------------------------------


def test_encrypted_file_is_inspected_without_a_key(cli, setup) -> None:
    run = cli("inspect", setup["enc"], "--tensors", "--json")
    assert run.code == 0
    report = run.json
    assert report["flags"]["encrypted"] and report["encryption"] == "argon2id"
    assert report["class"] == "aprender.linear_model.LogisticRegression"
    assert [t["stats"] for t in report["tensors"]] == [None] * 4
    assert report["notes"][0].startswith("the data is encrypted: statistics need --password-file")
    run = cli("validate", setup["enc"], "--json")
    assert run.code == 0
    assert "encrypted data not opened" in run.json["checks"][-1]


def test_decrypt_with_the_right_and_a_wrong_password(cli, setup, tmp_path: Path, monkeypatch) -> None:
    out = tmp_path / "plain.apr"
    run = cli("decrypt", setup["enc"], "-o", out, "--password-file", setup["bad_pw"])
    assert run.code == 1
    assert "decryption failed: wrong password or key" in one_error_line(run)
    assert not out.exists()
    monkeypatch.setenv("APR_PASSWORD", PASSWORD)
    assert cli("decrypt", setup["enc"], "-o", out, "--password-env", "APR_PASSWORD").code == 0
    assert not aprender.inspect(out).encrypted and aprender.inspect(out).compressed == "zstd"
    assert cli("diff", setup["apr"], out).code == 0
    run = cli("validate", setup["enc"], "--password-file", setup["pw"], "--json")
    assert run.code == 0 and "AES-256-GCM decryption" in run.json["checks"]


def test_passwords_never_come_from_arguments(cli, setup, tmp_path: Path) -> None:
    run = cli("decrypt", setup["enc"], "-o", tmp_path / "p.apr", "--password", PASSWORD)
    assert run.code == 2 and "No such option" in one_error_line(run)
    run = cli("decrypt", setup["enc"], "-o", tmp_path / "p.apr")  # stdin is not a terminal here
    assert run.code == 2
    assert "is encrypted with a password; pass --password-file or --password-env" in one_error_line(run)
    run = cli("encrypt", setup["apr"], "-o", tmp_path / "e.apr")
    assert run.code == 2 and "no password" in one_error_line(run)
    run = cli("decrypt", setup["enc"], "-o", tmp_path / "p.apr", "--password-env", "APR_UNSET_VARIABLE")
    assert run.code == 2 and "APR_UNSET_VARIABLE is not set" in one_error_line(run)
    assert not list(tmp_path.iterdir())


def test_password_prompt_on_a_terminal(setup, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(_secrets, "stdin_is_tty", lambda: True)
    out = tmp_path / "prompted.apr"
    with click.testing.CliRunner().isolation(input="s3cret\ns3cret\n"):
        assert main(["encrypt", str(setup["st"]), "-o", str(out)]) == 0
    with click.testing.CliRunner().isolation(input="s3cret\nother\n"):  # the confirmation differs, then EOF
        assert main(["encrypt", str(setup["st"]), "-o", str(tmp_path / "mismatch.apr")]) == 130
    assert not (tmp_path / "mismatch.apr").exists()
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cret\n")
    monkeypatch.setattr(_secrets, "stdin_is_tty", lambda: False)
    assert main(["decrypt", str(out), "-o", str(tmp_path / "plain.apr"), "--password-file", str(secret)]) == 0


def test_encrypt_for_a_recipient(cli, setup, tmp_path: Path) -> None:
    sealed, out = tmp_path / "for-bob.apr", tmp_path / "bob.apr"
    run = cli("encrypt", setup["st"], "-o", sealed, "--recipient", setup["bob.pub"], "--json")
    assert run.code == 0 and run.json["encryption"] == "x25519-hkdf-sha256"
    run = cli("decrypt", sealed, "-o", out, "--secret-key", setup["eve"])
    assert run.code == 1 and "decryption failed" in one_error_line(run)
    run = cli("decrypt", sealed, "-o", out, "--secret-key", setup["signer"])
    assert run.code == 2 and "holds an Ed25519 private key; this needs an X25519 private key" in one_error_line(run)
    run = cli("decrypt", sealed, "-o", out)
    assert run.code == 2 and "pass --secret-key" in one_error_line(run)
    assert cli("decrypt", sealed, "-o", out, "--secret-key", setup["bob"]).code == 0
    assert cli("diff", setup["st"], out).code == 0
    run = cli("convert", sealed, "-o", tmp_path / "bob.gguf", "--secret-key", setup["bob"])
    assert run.code == 0
    assert run.err == f"warning: '{tmp_path / 'bob.gguf'}' is not encrypted (its source was); seal it with 'encrypt'\n"
    assert cli("diff", sealed, tmp_path / "bob.gguf", "--secret-key", setup["bob"]).code == 0
    run = cli("encrypt", sealed, "-o", tmp_path / "twice.apr", "--recipient", setup["bob.pub"])
    assert run.code == 1 and "is already encrypted" in one_error_line(run)
    run = cli("decrypt", setup["st"], "-o", tmp_path / "x.apr", "--secret-key", setup["bob"])
    assert run.code == 1 and "is not encrypted" in one_error_line(run)


def test_sign_keeps_encryption_and_encrypt_drops_a_signature(cli, setup, model, tmp_path: Path) -> None:
    signed = tmp_path / "enc-signed.apr"
    assert cli("sign", setup["enc"], "--key", setup["signer"], "-o", signed, "--password-file", setup["pw"]).code == 0
    info = aprender.inspect(signed)
    assert info.signed and info.encrypted and info.compressed == "zstd"
    assert cli("verify", signed, "--key", setup["signer.pub"]).code == 0
    run = cli("validate", signed, "--password-file", setup["pw"], "--json")
    assert run.code == 0
    assert {"Ed25519 signature (embedded key)", "AES-256-GCM decryption",
            "model rebuilt through the allow-list"} <= set(run.json["checks"])
    plain_signed = tmp_path / "signed.apr"
    cli("sign", setup["apr"], "--key", setup["signer"], "-o", plain_signed)
    run = cli("encrypt", plain_signed, "-o", tmp_path / "unsigned.apr", "--recipient", setup["bob.pub"])
    assert run.code == 0
    assert run.err == f"warning: the signature of '{plain_signed}' is not carried over; sign the new file with 'sign'\n"
    assert not aprender.inspect(tmp_path / "unsigned.apr").signed


def _tamper_data(path: Path, target: Path) -> Path:
    """Flip the first data byte and recompute both CRCs, as a forger would: only the signature can tell."""
    data = bytearray(path.read_bytes())
    data[layout_of(bytes(data))[2]] ^= 0x01
    target.write_bytes(refresh_crcs(data))
    return target


def test_a_tampered_signed_source_is_never_laundered(cli, setup, tmp_path: Path) -> None:
    signed, enc_signed = tmp_path / "signed.apr", tmp_path / "enc-signed.apr"
    cli("sign", setup["apr"], "--key", setup["signer"], "-o", signed)
    cli("sign", setup["enc"], "--key", setup["signer"], "-o", enc_signed, "--password-file", setup["pw"])
    tampered = _tamper_data(signed, tmp_path / "tampered.apr")
    enc_tampered = _tamper_data(enc_signed, tmp_path / "enc-tampered.apr")
    out = tmp_path / "out"
    commands = {
        "convert": ("convert", tampered, "--format", "gguf", "-o", out),
        "export": ("export", tampered, "--format", "safetensors", "-o", out),
        "quantize": ("quantize", tampered, "--type", "q8_0", "-o", out.with_suffix(".apr")),
        "decrypt": ("decrypt", enc_tampered, "-o", out, "--password-file", setup["pw"]),
    }
    for name, args in commands.items():
        run = cli(*args)
        assert run.code == 1, name
        assert "the Ed25519 signature does not verify" in one_error_line(run), name
        assert not out.exists() and not out.with_suffix(".apr").exists(), name


def test_convert_of_a_signed_source_says_what_was_verified(cli, setup, tmp_path: Path) -> None:
    signed = tmp_path / "signed.apr"
    cli("sign", setup["apr"], "--key", setup["signer"], "-o", signed)
    run = cli("convert", signed, "--format", "gguf", "-o", tmp_path / "out.gguf")
    assert run.code == 0
    assert run.err == (f"warning: '{tmp_path / 'out.gguf'}' is not signed (its source's signature verified against "
                       "the key embedded in it); sign the output with 'sign'\n")
