"""A corpus of secrets in the forms they take in transcripts, and text that is none.

Every value is made up here, from a seeded random generator (the same on every run, so
that a failure can be reproduced): none is a real credential, and no credential-shaped
literal is in the repository for a secret scanner to flag. Each form is the line a
transcript would carry (an ``.env`` line, a header, a URL, a key wrapped by a terminal,
a key base64-encoded in a Kubernetes secret, ...) and the strings of which no piece may
show once redacted.

``ISSUE_29`` names the 21 forms that the hardening audit of issue 29 found ``redact()``
missed; ``ORDINARY`` is text that looks a little like a secret and is none (it must come
out as it went in).
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
import urllib.parse
from dataclasses import dataclass

B62 = string.ascii_letters + string.digits
B64 = B62 + "+/"
URLSAFE = B62 + "-_"
HEX = "0123456789abcdef"
UPPER = string.ascii_uppercase + string.digits
PIECE = 8  # a surface leaks when any run of this many characters of a secret shows


def _rng(name: str) -> random.Random:
    return random.Random(f"cacheviz-secret-corpus/{name}")


def _draw(rng: random.Random, alphabet: str, n: int) -> str:
    """``n`` characters of ``alphabet``, with at least one digit and one letter when it has
    both (as generated keys have)."""
    while True:
        out = "".join(rng.choice(alphabet) for _ in range(n))
        digits = any(c.isdigit() for c in alphabet)
        letters = any(c.isalpha() for c in alphabet)
        if (not digits or any(c.isdigit() for c in out)) and (
            not letters or any(c.isalpha() for c in out)
        ):
            return out


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _pem(rng: random.Random, label: str, lines: int = 6, escaped: bool = False) -> str:
    body = [_draw(rng, B64, 64) for _ in range(lines)] + [_draw(rng, B64, 40) + "=="]
    newline = "\\n" if escaped else "\n"
    return newline.join([f"-----BEGIN {label}-----", *body, f"-----END {label}-----"])


@dataclass(frozen=True)
class Form:
    """One secret as a transcript carries it."""

    name: str
    text: str
    """The line holding the secret, as written."""
    hidden: tuple[str, ...]
    """The strings of which no ``PIECE``-character run may show (the secret's distinctive
    part, and its encoded form when it is written encoded)."""

    def leaks(self, shown: str) -> list[str]:
        """The pieces of the secret that show in ``shown`` (a surface's text)."""
        flat = unescape(shown)
        return sorted({piece for value in self.hidden for piece in pieces(value) if piece in flat})


def pieces(value: str, size: int = PIECE) -> set[str]:
    """Every run of ``size`` characters of ``value`` (line breaks and invisible marks out)."""
    value = re.sub(r"[\n\r\u200b\u200c\u200d\u2060\ufeff\u00ad]", "", value)
    return {value[i : i + size] for i in range(len(value) - size + 1)}


def unescape(text: str) -> str:
    """A surface's text with the escapes of JSON, HTML and ``visible()`` undone, so that
    an escaped piece of a secret counts as shown."""
    text = text.replace("\\/", "/").replace("\\n", "\n").replace("\\r", "\r")
    text = re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), text)
    text = text.replace("&#x27;", "'").replace("&quot;", '"').replace("&amp;", "&")
    return re.sub(r"[\u200b\u200c\u200d\u2060\ufeff\u00ad]", "", text)


def _jwt(rng: random.Random) -> str:
    header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims = {"sub": f"user-{rng.randrange(10**6)}", "iat": 1_700_000_000 + rng.randrange(10**6)}
    return f"{header}.{_b64url(json.dumps(claims).encode())}.{_draw(rng, URLSAFE, 43)}"


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


def _forms() -> dict[str, Form]:
    forms: dict[str, Form] = {}

    def add(name: str, template: str, secret: str, *hidden: str) -> None:
        forms[name] = Form(name, template.format(secret), hidden or (secret,))

    def r(name: str) -> random.Random:
        return _rng(name)

    # -- keys with a known prefix ------------------------------------------------------
    anthropic = "sk-ant-api03-" + _draw(r("anthropic"), URLSAFE, 93) + "AA"
    add("anthropic", "export ANTHROPIC_KEY_FOR_CI {} done", anthropic, anthropic[13:])
    proj = "sk-proj-" + _draw(r("openai-project"), URLSAFE, 120)
    add("openai-project", "client = OpenAI(api_key='{}')", proj, proj[8:])
    legacy = "sk-" + _draw(r("openai-legacy"), B62, 20) + "T3BlbkFJ" + _draw(r("ol2"), B62, 20)
    add("openai-legacy", "using {} for the batch", legacy, legacy[3:])
    svc = "sk-svcacct-" + _draw(r("openai-svcacct"), URLSAFE, 80)
    add("openai-service-account", "svc key {}", svc, svc[11:])
    akia = "AKIA" + _draw(r("aws-id"), UPPER, 16)
    add("aws-access-key-id", "aws_access_key_id={}", akia, akia[4:])
    aws = _draw(r("aws-secret"), B64, 40)
    add("aws-secret-ini", "aws_secret_access_key = {}", aws)
    add("aws-secret-json", '{{"SecretAccessKey": "{}"}}', _draw(r("aws-json"), B64, 40))
    add("aws-configure-set", "aws configure set aws_secret_access_key {}", _draw(r("acs"), B64, 40))
    add("aws-env", "export AWS_SECRET_ACCESS_KEY={}", _draw(r("aws-env"), B64, 40))
    add("azure-storage", "AccountName=acct;AccountKey={};", _draw(r("azure"), B64, 86) + "==")
    discord = (
        "MT"
        + _draw(r("discord"), URLSAFE, 24)
        + "."
        + _draw(r("d2"), URLSAFE, 6)
        + "."
        + _draw(r("d3"), URLSAFE, 38)
    )
    add("discord-bot", "DISCORD_BOT {}", discord)
    ghp = "ghp_" + _draw(r("github"), B62, 36)
    add("github-classic", "{}", ghp, ghp[4:])
    gho = "gho_" + _draw(r("github-oauth"), B62, 36)
    add("github-oauth", "oauth {} end", gho, gho[4:])
    pat = "github_pat_11" + _draw(r("gh-pat"), UPPER, 20) + "_" + _draw(r("gh-pat2"), B62, 59)
    add("github-fine-grained", "GH {}", pat, pat[11:])
    glpat = "glpat-" + _draw(r("gitlab"), URLSAFE, 20)
    add("gitlab-pat", "gitlab {}", glpat, glpat[6:])
    runner = "GR1348941" + _draw(r("gitlab-runner"), URLSAFE, 20)
    add("gitlab-runner", "registration {}", runner, runner[9:])
    add("jwt", "session jwt {}", _jwt(r("jwt")))
    npmrc = _draw(r("npmrc"), URLSAFE, 36)
    add("npmrc-line", "//registry.npmjs.org/:_authToken={}", npmrc)
    npm = "npm_" + _draw(r("npm"), B62, 36)
    add("npm-bare", "the token {} in CI", npm, npm[4:])
    pypi = "pypi-AgEIcHlwaS5vcmc" + _draw(r("pypi"), URLSAFE, 140)
    add("pypi", "password = {}", pypi, pypi[20:])
    sendgrid = "SG." + _draw(r("sendgrid"), URLSAFE, 22) + "." + _draw(r("sg2"), URLSAFE, 43)
    add("sendgrid", "mail {}", sendgrid, sendgrid[3:])
    slack = (
        f"xoxb-{r('slack').randrange(10**11, 10**12)}-{r('s2').randrange(10**12, 10**13)}-"
        + _draw(r("s3"), B62, 24)
    )
    add("slack-bot", "{}", slack, slack[5:])
    hook = f"T0{_draw(r('hook'), UPPER, 7)}/B0{_draw(r('h2'), UPPER, 7)}/{_draw(r('h3'), B62, 24)}"
    add("slack-webhook", "https://hooks.slack.com/services/{}", hook)
    square = "sq0csp-" + _draw(r("square"), URLSAFE, 43)
    add("square", "square {}", square, square[7:])
    stripe = "sk_live_" + _draw(r("stripe"), B62, 99)
    add("stripe-live", "{}", stripe, stripe[8:])
    restricted = "rk_test_" + _draw(r("stripe-rk"), B62, 24)
    add("stripe-restricted", "rk {}", restricted, restricted[8:])
    telegram = f"{r('telegram').randrange(10**9, 10**10)}:AA" + _draw(r("t2"), URLSAFE, 33)
    add("telegram-bot", "bot {}", telegram, telegram[12:])
    google = "AIza" + _draw(r("google"), URLSAFE, 35)
    add("google-api-key", "{}", google, google[4:])
    hf = "hf_" + _draw(r("hf"), B62, 34)
    add("huggingface", "HF_TOKEN {}", hf, hf[3:])
    # -- private keys ------------------------------------------------------------------
    rsa = _pem(r("pem-rsa"), "RSA PRIVATE KEY")
    add("pem-rsa", "{}", rsa, rsa.split("\n", 1)[1].rsplit("\n", 1)[0])
    pkcs8 = _pem(r("pem-pkcs8"), "PRIVATE KEY")
    add("pem-pkcs8", "key:\n{}\nend", pkcs8, pkcs8.split("\n", 1)[1].rsplit("\n", 1)[0])
    openssh = _pem(r("pem-openssh"), "OPENSSH PRIVATE KEY")
    add("pem-openssh", "{}", openssh, openssh.split("\n", 1)[1].rsplit("\n", 1)[0])
    ec = _pem(r("pem-ec"), "EC PRIVATE KEY", lines=2)
    add("pem-ec", "{}", ec, ec.split("\n", 1)[1].rsplit("\n", 1)[0])
    sa = _pem(r("service-account"), "PRIVATE KEY", escaped=True)
    add(
        "service-account-json",
        '{{"type": "service_account", "private_key": "{}\\n"}}',
        sa,
        sa.split("\\n", 1)[1].rsplit("\\n", 1)[0].replace("\\n", ""),
    )
    # -- labelled secrets --------------------------------------------------------------
    add("bearer", "Authorization: Bearer {}", _draw(r("bearer"), URLSAFE, 40))
    add("password-json", 'config: {{"password": "{}"}}', "correct-horse-" + _draw(r("pw"), B62, 12))
    add("api-key-env", "API_KEY={}", _draw(r("api-key-env"), B62, 32))
    add("client-secret", "client_secret: {}", _draw(r("client-secret"), URLSAFE, 40))
    add("jwt-secret-env", "JWT_SECRET={}", _draw(r("jwt-secret"), B62, 48))
    add("token-field", "token={}", _draw(r("token-field"), B62, 40))
    add("pgpassword", "PGPASSWORD={} psql -h db", _draw(r("pgpassword"), B62, 20))
    add("x-api-key-header", "x-api-key: {}", _draw(r("x-api-key"), B62, 32))
    add("private-key-id", '"private_key_id": "{}"', _draw(r("pkid"), HEX, 40))
    # -- URLs with credentials ---------------------------------------------------------
    add(
        "postgres-url", "DATABASE_URL=postgres://app:{}@db.internal:5432/x", _draw(r("pg"), B62, 20)
    )
    add("redis-url", "REDIS_URL=redis://:{}@cache.internal:6379/0", _draw(r("redis"), B62, 20))
    add(
        "git-clone-url",
        "git clone https://deploy:{}@git.example.com/r.git",
        _draw(r("gc"), B62, 20),
    )
    # -- the forms issue 29 found missed -----------------------------------------------
    add("google-oauth-access", "access_token ya29.{} used", _draw(r("ya29"), URLSAFE, 150))
    add("google-oauth-refresh", "refresh with 1//0{} now", _draw(r("refresh"), URLSAFE, 100))
    pgp_rng = r("pgp")
    pgp = "\n".join(
        [
            "-----BEGIN PGP PRIVATE KEY BLOCK-----",
            "Version: GnuPG v2",
            "",
            *(_draw(pgp_rng, B64, 64) for _ in range(8)),
            "=" + _draw(pgp_rng, B64, 4),
            "-----END PGP PRIVATE KEY BLOCK-----",
        ]
    )
    add("pgp-private-key", "{}", pgp, pgp.split("\n\n", 1)[1].rsplit("\n", 1)[0])
    basic_password = _draw(r("basic"), B62, 18)
    basic = base64.b64encode(f"deploy:{basic_password}".encode()).decode()
    add("authorization-basic", "Authorization: Basic {}", basic, basic, basic_password)
    add("authorization-token", "Authorization: token {}", _draw(r("auth-token"), HEX, 40))
    cookie = _draw(r("cookie"), URLSAFE, 40)
    csrf = _draw(r("csrf"), B62, 32)
    add(
        "cookie-header",
        "Cookie: {}",
        f"sessionid={cookie}; csrftoken={csrf}; theme=dark",
        cookie,
        csrf,
    )
    add("dotenv-db-pass", "DB_PASS={}", _draw(r("db-pass"), B62, 20))
    add("dotenv-mysql-pwd", "MYSQL_PWD={}", _draw(r("mysql-pwd"), B62, 20))
    add("dotenv-secret-key-base", "SECRET_KEY_BASE={}", _draw(r("skb"), HEX, 128))
    add("dotenv-encryption-key", "ENCRYPTION_KEY={}", _draw(r("enc"), B64, 43) + "=")
    add("dotenv-jwt-signing-key", "JWT_SIGNING_KEY={}", _draw(r("jwt-sign"), B62, 64))
    add(
        "url-userinfo-token",
        "git clone https://{}@github.com/org/repo.git",
        _draw(r("ut"), HEX, 40),
    )
    slash = _draw(r("slash"), B62, 10) + "/" + _draw(r("slash2"), B62, 12)
    add("url-password-with-slash", "mongodb://app:{}@mongo.internal:27017/db", slash)
    zw = "sk-ant-api03-" + _draw(r("zwsp"), URLSAFE, 93) + "AA"
    add("key-split-zero-width", "key {} end", zw[:30] + "\u200b" + zw[30:], zw[13:])
    nl = "sk-ant-api03-" + _draw(r("newline"), URLSAFE, 93) + "AA"
    add("key-split-newline", "key {} end", nl[:50] + "\n" + nl[50:], nl[13:])
    add("mailgun-key", "MG key-{} for sending", _draw(r("mailgun"), HEX, 32))
    mailgun = f"{_draw(r('mg2'), HEX, 32)}-{_draw(r('mg3'), HEX, 8)}-{_draw(r('mg4'), HEX, 8)}"
    add("mailgun-key-new", "curl --user 'api:{}' https://api.mailgun.net", mailgun)
    add("hex-after-api-key", "my api key is {} for the staging box", _draw(r("hexkey"), HEX, 32))
    encoded_key = "sk-ant-api03-" + _draw(r("urlenc"), URLSAFE, 93) + "AA"
    encoded = "".join(f"%{b:02X}" for b in encoded_key.encode())
    add("url-encoded-key", "GET /proxy?u={} HTTP/1.1", encoded, encoded, encoded_key[13:])
    b64_key = "sk-ant-api03-" + _draw(r("b64"), URLSAFE, 93) + "AA"
    b64 = base64.b64encode(b64_key.encode()).decode()
    add("base64-key", "data:\n  value: {}\n", b64, b64, b64_key[13:])
    wide_key = "sk-ant-api03-" + _draw(r("wide"), URLSAFE, 93) + "AA"
    wide = _fullwidth(wide_key[:13]) + wide_key[13:]
    add("fullwidth-prefixed-key", "key {} end", wide, wide_key[13:])
    # -- more of the same shapes -------------------------------------------------------
    aws_query = (
        _draw(r("aws-query"), B62, 12)
        + "/"
        + _draw(r("aq2"), B62, 12)
        + "+"
        + _draw(r("aq3"), B62, 14)
    )
    add(
        "url-encoded-aws-form",
        "body=Action%3DX%26aws_secret_access_key%3D{}%26v%3D1",
        urllib.parse.quote(aws_query, safe=""),
        aws_query.replace("/", "").replace("+", ""),
    )
    add(
        "set-cookie-header",
        "Set-Cookie: __Host-session={}; Path=/; Secure; HttpOnly",
        _draw(r("sc"), URLSAFE, 48),
    )
    add(
        "proxy-authorization",
        "Proxy-Authorization: Basic {}",
        base64.b64encode(f"u:{_draw(r('pa'), B62, 20)}".encode()).decode(),
    )
    esc = "sk-ant-api03-" + _draw(r("escaped-newline"), URLSAFE, 93) + "AA"
    add("key-split-escaped-newline", '{{"text": "key {}"}}', esc[:60] + "\\n" + esc[60:], esc[13:])
    return forms


FORMS = _forms()
ISSUE_29 = (
    "google-oauth-access",
    "google-oauth-refresh",
    "pgp-private-key",
    "authorization-basic",
    "authorization-token",
    "cookie-header",
    "dotenv-db-pass",
    "dotenv-mysql-pwd",
    "dotenv-secret-key-base",
    "dotenv-encryption-key",
    "dotenv-jwt-signing-key",
    "url-userinfo-token",
    "url-password-with-slash",
    "key-split-zero-width",
    "key-split-newline",
    "mailgun-key",
    "mailgun-key-new",
    "hex-after-api-key",
    "url-encoded-key",
    "base64-key",
    "fullwidth-prefixed-key",
)

# Text like a secret in one way or another that is none: it comes out as it went in.
ORDINARY = (
    "Basic understanding of the codebase helps; authorization: required for every call.",
    "Authorization: Bearer <token>  and  Authorization: Basic $CREDENTIALS",
    "The token count is 123456; max_tokens: 4096; input_tokens: 1500; cache_read_input_tokens: 0",
    "Cookie: a small piece of data the browser keeps (see the Cookie header docs).",
    "The api key rotation policy is documented; your API key is stored in the vault.",
    "The password must be at least 12 characters long; DB_PASS is read from the env.",
    "SECRET_KEY_BASE is generated by `rails secret`; ENCRYPTION_KEY rotates yearly.",
    "commit 3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a Merge branch 'main' into feature",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "request id 6f1c9a4e-2b3d-4e5f-8a9b-0c1d2e3f4a5b took 1.2 s",
    "open http://localhost:5173/@vite/client and https://medium.com/@someone/post-1",
    "ssh://git@github.com/org/repo.git and git@github.com:org/repo.git",
    "https://www.npmjs.com/package/@scope/name and https://host:8443/path/@user",
    "src/components/Header.tsx:12:5 - error TS2322: Type 'string' is not assignable",
    "图片太大了，请压缩：（最大 5 MB）。Ｔｈｅ ｆｕｌｌｗｉｄｔｈ ｔｅｘｔ ｉｓ ｆｉｎｅ．",
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk",
    "the words run\non over a line\nbreak and a zero\u200bwidth space",
    "percent-encoded path /docs/My%20File%20Name.pdf?q=a%2Bb",
    "primary_key = user_id_column; sort_key: created_at_timestamp",
    "token_endpoint: https://oauth2.googleapis.com/token",
    "The sessionid cookie expires; csrftoken is set on login.",
    "1//0 is not a number and ya29 is a prefix",
    "key-value store; hotkey-bindings-for-editor; monkey-patching-is-fine-here",
    "def test_no_piece_of_a_secret_reaches_a_surface_when_cut_across(kind): pass",
)
