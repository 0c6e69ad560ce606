"""Fake secrets and personal data for the leak tests and tests/bench/bench_redact.py.

Every value is generated from a seeded RNG in the shape public secret scanners test (prefix,
alphabet, length); none is a real key, and no file holds one (push-protection scanners see
only the recipes). ``corpus()`` gives ``(kind, secret, sentence)``: the sentence is how a
person, an assistant or a tool would put it; ``secret`` is what must not get out.
"""

from __future__ import annotations

import base64
import random
import string
from collections.abc import Callable

UP, LO, DIG = string.ascii_uppercase, string.ascii_lowercase, string.digits
ALNUM = UP + LO + DIG
HEX = "0123456789abcdef"


class _G:
    def __init__(self, seed: int):
        self.r = random.Random(seed)

    def s(self, n: int, alphabet: str = ALNUM) -> str:
        out = "".join(self.r.choice(alphabet) for _ in range(n))
        if alphabet is ALNUM or alphabet == ALNUM + "_-":  # a key always mixes letters and digits
            out = self.r.choice(DIG) + out[1:-1] + self.r.choice(LO)
        return out

    def pick(self, *xs: str) -> str:
        return self.r.choice(xs)


def _recipes(g: _G) -> list[tuple[str, Callable[[], tuple[str, str]]]]:
    """kind → () -> (secret, sentence containing it)."""
    def uuid() -> str:
        return f"{g.s(8, HEX)}-{g.s(4, HEX)}-4{g.s(3, HEX)}-a{g.s(3, HEX)}-{g.s(12, HEX)}"

    def say(secret: str, *templates: str) -> tuple[str, str]:
        return secret, g.pick(*templates).format(s=secret)

    sk = "sk"  # split so that no line of this file is a key prefix followed by a key
    return [
        ("openai_key", lambda: say(f"{sk}-{g.s(48)}", "use {s} for the old API", "OPENAI_KEY is {s}")),
        ("openai_project_key", lambda: say(f"{sk}-proj-{g.s(64, ALNUM + '_-')}", "new project key {s} works")),
        ("openai_short_key", lambda: say(f"{sk}-{g.s(16)}", "the proxy key {s} from the admin page")),
        ("anthropic_key", lambda: say(f"{sk}-ant-api03-{g.s(93, ALNUM + '_-')}AA", "export ANTHROPIC_API_KEY={s}")),
        ("google_api_key", lambda: say("AI" + f"za{g.s(35, ALNUM + '_-')}", "gemini key {s} works")),
        ("google_oauth", lambda: say("ya" + f"29.{g.s(120, ALNUM + '_-')}", "access token ya? {s}")),
        ("google_client_secret", lambda: say("GOC" + f"SPX-{g.s(28, ALNUM + '_-')}", "client secret {s}")),
        ("github_pat_classic", lambda: say("gh" + f"p_{g.s(36)}", "git clone https://{s}@github.com/o/r",
                                           "token {s} expired")),
        ("github_pat_fine", lambda: say("github" + f"_pat_{g.s(22)}_{g.s(59)}", "fine-grained {s}")),
        ("github_oauth", lambda: say("gh" + f"o_{g.s(36)}", "oauth app {s}")),
        ("gitlab_pat", lambda: say("gl" + f"pat-{g.s(20, ALNUM + '_-')}", "gitlab {s}")),
        ("slack_bot", lambda: say("xo" + f"xb-{g.s(12, DIG)}-{g.s(13, DIG)}-{g.s(24)}", "slack bot {s}")),
        ("slack_user", lambda: say("xo" + f"xp-{g.s(12, DIG)}-{g.s(12, DIG)}-{g.s(12, DIG)}-{g.s(32, HEX)}",
                                   "slack user token {s}")),
        ("slack_app", lambda: say("xa" + f"pp-1-A{g.s(10, UP + DIG)}-{g.s(13, DIG)}-{g.s(64, HEX)}",
                                  "socket mode app token {s}")),
        ("slack_refresh", lambda: say("xo" + f"xe-1-{g.s(140, ALNUM)}", "the refresh token {s} rotates")),
        ("slack_webhook", lambda: say("https://hooks." + f"slack.com/services/T{g.s(8, UP + DIG)}/B{g.s(10, UP + DIG)}/{g.s(24)}",
                                      "post to {s}")),
        ("slack_webhook_http", lambda: say("http://hooks." + f"slack.com/services/T{g.s(8, UP + DIG)}/B{g.s(10, UP + DIG)}/{g.s(24)}",
                                           "old webhook {s}")),
        ("slack_workflow", lambda: say("https://hooks." + f"slack.com/workflows/T{g.s(8, UP + DIG)}/A{g.s(10, UP + DIG)}/{g.s(18, DIG)}/{g.s(24)}",
                                       "workflow trigger {s}")),
        ("aws_access_key_id", lambda: say("AK" + f"IA{g.s(16, UP + DIG)}", "aws id {s} in ~/.aws/credentials")),
        ("aws_secret_key", lambda: say(g.s(20) + "/" + g.s(10) + "+" + g.s(8), "aws_secret_access_key = {s}")),
        ("stripe_live", lambda: say("sk" + f"_live_{g.s(24)}", "stripe {s}")),
        ("stripe_prod", lambda: say("sk" + f"_prod_{g.s(24)}", "prod stripe key {s}")),
        ("stripe_restricted_prod", lambda: say("rk" + f"_prod_{g.s(24)}", "restricted {s}")),
        ("stripe_webhook", lambda: say("wh" + f"sec_{g.s(32)}", "stripe webhook signing {s}")),
        ("bearer", lambda: say(g.s(40, ALNUM + "._-"), "curl -H 'Authorization: Bearer {s}' https://api.acme.io")),
        ("basic_header", lambda: say(base64.b64encode(f"svc{g.s(4, DIG)}:{g.s(14)}".encode()).decode(),
                                     "Authorization: Basic {s}")),
        ("base64_user_pass", lambda: say(base64.b64encode(f"admin:{g.s(12)}".encode()).decode(),
                                         '"auths": {{"registry.acme.io": {{"auth": "{s}"}}}}',
                                         "echo {s} | base64 -d")),
        ("jwt", lambda: say("ey" + "JhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + "eyJzdWIiOiIx" + g.s(40, ALNUM + "_-")
                            + "." + g.s(43, ALNUM + "_-"), "session cookie {s}")),
        ("private_key_rsa", lambda: say("\n".join(g.s(64, ALNUM + "+/") for _ in range(5)),
                                        "-----BEGIN RSA " + "PRIVATE KEY-----\n{s}\n-----END RSA PRIVATE KEY-----")),
        ("private_key_openssh", lambda: say("\n".join(g.s(70, ALNUM + "+/") for _ in range(4)),
                                            "-----BEGIN OPENSSH " + "PRIVATE KEY-----\n{s}\n-----END OPENSSH PRIVATE KEY-----")),
        ("url_password", lambda: say(g.s(18), "DATABASE_URL=postgres://app:{s}@db.internal:5432/prod",
                                     "mongodb+srv://admin:{s}@cluster0.acme.net")),
        ("redis_url", lambda: say(g.s(24), "redis://:{s}@cache:6379/0")),
        ("env_api_key", lambda: say(g.s(32), "API_KEY={s}", "SERVICE_TOKEN: {s}")),
        ("json_password", lambda: say(g.s(14), '{{"password": "{s}"}}', '{{"db": {{"passwd": "{s}"}}}}')),
        ("pgpassword", lambda: say(g.s(16), "PGPASSWORD={s} psql -h db -U app", "export PGPASSWORD='{s}'")),
        ("mysql_pwd_env", lambda: say(g.s(14), "MYSQL_PWD={s} mysqldump shop > dump.sql")),
        ("mysql_p_flag", lambda: say(g.s(14), "mysql -u root -p{s} shop", "mysqldump -uadmin -p'{s}' --all-databases")),
        ("curl_u", lambda: say(g.s(16), "curl -u admin:{s} https://ci.acme.io/api/json",
                               "curl --user deploy:{s} -X POST https://nexus.acme.io")),
        ("sshpass", lambda: say(g.s(12), "sshpass -p {s} ssh root@10.0.0.5", "sshpass -p '{s}' scp a b:")),
        ("docker_login", lambda: say(g.s(20), "docker login -u bob -p {s} registry.acme.io",
                                     "docker login --password {s} -u bob")),
        ("password_phrase_en", lambda: say(g.s(10) + "!", "the admin password is {s}", "Password for the NAS is {s}.",
                                           "the root password was changed to {s}")),
        ("password_phrase_zh", lambda: say(g.s(10), "默认密码是{s}，记得改", "数据库密码：{s}", "wifi 密码为 {s}")),
        ("cli_password_flag", lambda: say(g.s(16), "app --password={s} --user ops", "tool --api-key {s} run")),
        ("pypi_token", lambda: say("py" + f"pi-AgEIcHlwaS5vcmc{g.s(70, ALNUM + '_-')}", "twine upload -p {s} dist/*",
                                   "PyPI token {s}")),
        ("heroku_uuid", lambda: say(uuid(), "heroku api key {s}", "HEROKU_API_KEY={s}", "heroku auth token: {s}")),
        ("heroku_hrku", lambda: say("HR" + f"KU-AA{g.s(58, ALNUM + '_-')}", "new heroku token {s}")),
        ("huggingface", lambda: say("hf" + f"_{g.s(34)}", "huggingface {s}")),
        ("npm_token", lambda: say("np" + f"m_{g.s(36)}", "npm token {s}")),
        ("npmrc", lambda: say(uuid(), "//registry.npmjs.org/:_authToken={s}")),
        ("telegram_bot", lambda: say(f"{g.s(10, DIG)}:AA{g.s(33, ALNUM + '_-')}", "telegram bot {s}")),
        ("sendgrid", lambda: say("SG" + f".{g.s(22, ALNUM + '_-')}.{g.s(43, ALNUM + '_-')}", "sendgrid {s}")),
        ("groq", lambda: say("gs" + f"k_{g.s(52)}", "groq {s}")),
        ("vault_service", lambda: say("hv" + f"s.{g.s(90, ALNUM + '_-')}", "VAULT_TOKEN is {s}")),
        ("vault_batch", lambda: say("hv" + f"b.AAAAAQ{g.s(120, ALNUM + '_-')}", "batch token {s}")),
        ("discord_bot", lambda: say(g.pick("M", "N", "O") + g.s(23) + "." + g.s(6, ALNUM + "_-") + "." + g.s(27, ALNUM + "_-"),
                                    "discord bot token {s}")),
        ("twilio_key", lambda: say("S" + "K" + g.s(32, HEX), "twilio api key {s}")),
        ("mailchimp", lambda: say(g.s(32, HEX) + "-us" + g.pick("6", "14", "21"), "mailchimp {s}")),
        ("azure_storage", lambda: say(g.s(86, ALNUM + "+/") + "==",
                                      "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={s};EndpointSuffix=core")),
        ("square_oauth", lambda: say("sq" + f"0csp-{g.s(43, ALNUM + '_-')}", "square secret {s}")),
        ("age_key", lambda: say("AGE-" + f"SECRET-KEY-1{g.s(58, UP + DIG)}", "age {s}")),
        ("digitalocean", lambda: say("do" + f"p_v1_{g.s(64, HEX)}", "doctl auth init -t {s}")),
        ("shopify", lambda: say("sh" + f"pat_{g.s(32, HEX)}", "shopify admin {s}")),
        ("email", lambda: say(f"{g.pick('li.wei', 'maria.gonzalez', 'tkato', 'ops-team')}{g.s(3, DIG)}@"
                              f"{g.pick('gmail.com', 'acme-corp.io', 'qq.com', 'outlook.de')}",
                              "send the report to {s}", "author: {s}", "联系人邮箱 {s}")),
        ("phone_intl", lambda: say(g.pick(f"+1 415 555 {g.s(4, DIG)}", f"+44 20 7946 {g.s(4, DIG)}",
                                          f"+86 138 {g.s(4, DIG)} {g.s(4, DIG)}", f"+49 30 {g.s(8, DIG)}"),
                                   "call me at {s}", "gateway connected as {s}")),
        ("phone_cn", lambda: say("13" + g.s(9, DIG), "我的手机号 {s}", "手机:{s}")),
        ("phone_us", lambda: say(f"(415) 555-{g.s(4, DIG)}", "the office line is {s}")),
        ("magic_link", lambda: say(g.s(32, ALNUM + "_-"), "log in with https://app.acme.io/auth/magic-link/{s}",
                                   "invite: https://acme.io/invite/{s}")),
        ("url_query_token", lambda: say(g.s(40, ALNUM + "_-"), "https://app.acme.io/login?token={s}&next=/home",
                                        "https://api.acme.io/v1/export?format=csv&api_key={s}")),
        ("presigned_sig", lambda: say(g.s(64, HEX), "https://bucket.s3.amazonaws.com/k?X-Amz-Expires=300&X-Amz-Signature={s}")),
        ("feishu_user", lambda: say("ou" + f"_{g.s(32, HEX)}", "Feishu[main] DM from {s}: hello")),
        ("feishu_group", lambda: say("oc" + f"_{g.s(32, HEX)}", "group {s} asked for the report")),
        ("telegram_user", lambda: say(g.pick("1", "5", "7") + g.s(9, DIG),
                                      "[Telegram Li Wei id:{s} +2m 2026-11-20 09:00 UTC] the backup failed again")),
        # found by an audit of real `distill run` batch files (one kind per cause)
        ("phone_cn_glued", lambda: say("13" + g.s(9, DIG), "以后客服回访统一打我的手机号{s}，不要再打座机。",
                                       "手机号+86{s}，夜间也可以打")),
        ("phone_after_equals", lambda: say("+1415555" + g.s(4, DIG), "phone={s}", "tel={s} (after hours)")),
        ("phone_cn_grouped", lambda: say(g.pick(f"139 {g.s(4, DIG)} {g.s(4, DIG)}", f"186-{g.s(4, DIG)}-{g.s(4, DIG)}"),
                                         "我的手机 {s} 随时打", "手机 {s}")),
        ("phone_cn_intl", lambda: say(g.pick(f"(+86) 137-{g.s(4, DIG)}-{g.s(4, DIG)}", f"0086 136{g.s(8, DIG)}"),
                                      "电话 {s}", "紧急联系人 {s}，夜间也可以打")),
        ("password_zh_colon", lambda: say(g.s(12), "密码是：{s}", "密码是: {s}", "管理员密码为：{s}")),
        ("password_zh_changed", lambda: say(g.s(12), "密码改成了 {s}", "路由器密码已改成 {s}", "root 密码设置为 {s}",
                                            "密码设置成 {s}")),
        ("password_zh_quoted", lambda: say(g.s(12), "密码是『{s}』", "数据库密码是《{s}》")),
        ("curl_user_flag", lambda: say(g.s(12), "curl --user admin:{s} https://ci.acme.io/api/json")),
        ("odbc_pwd", lambda: say(g.s(12), "UID=svc_rpt;PWD={s}", "Data Source=db01;Initial Catalog=app;User Id=sa;Pwd={s};",
                                 "Driver={{PostgreSQL Unicode}};Server=db01;Uid=app;Pwd={s};")),
        ("password_is_colon", lambda: say(g.s(12), "the staging admin password is: {s}", "the root password was: {s}")),
        ("environ_subscript", lambda: say(g.s(20, HEX), 'os.environ["OPENAI_API_KEY"] = "{s}"',
                                          "config['db_password'] = '{s}'")),
        ("auth_scheme_token", lambda: say(g.s(20, HEX), "Authorization: Token {s}", "authorization: ApiKey {s}")),
        ("api_key_spaced", lambda: say(g.s(20, HEX), "the API key: {s}", "access key: {s}", "Secret key = {s}")),
        ("password_for_long", lambda: say(g.s(12), "the password for the admin account on db1 is {s}")),
        ("escaped_newline_name", lambda: say(g.s(20, HEX), "printf 'DB_HOST=db01\\napi_key={s}'",
                                             '"host=db01\\nsecret_key={s}\\nport=5432"')),
        ("url_password_at", lambda: say(g.s(12), "postgres://admin:p@ss{s}!@db.internal:5432/app")),
        ("url_encoded_token", lambda: say(g.s(20, HEX), "redirect_uri=https%3A%2F%2Fapp.corp.io%2Fcb%3Faccess_token%3D{s}",
                                          "next=%2Fcb%3Fstate%3Dx%26api_key%3D{s}")),
        # issue 22: the three kinds public scanners' fixtures still got through, and their family
        ("clojars_token", lambda: say("CLOJ" + f"ARS_{g.s(60, LO + DIG)}",
                                      "Error: lein deploy clojars failed: 401 for token {s}",
                                      "export CLOJARS_PASSWORD={s}", "lein deploy clojars with {s}")),
        ("rubygems_token", lambda: say("ruby" + f"gems_{g.s(48, HEX)}", "gem push failed: key {s} was revoked")),
        ("nuget_key", lambda: say("oy" + f"2{g.s(43, LO + DIG)}", "dotnet nuget push pkg.nupkg -k {s} -s nuget.org")),
        ("docker_hub_token", lambda: say("dckr" + f"_pat_{g.s(27, ALNUM + '_-')}", "docker login -u ci -p {s}",
                                         "echo {s} | docker login --password-stdin")),
        ("gitlab_deploy_token", lambda: say("gl" + f"dt-{g.s(20, ALNUM + '_-')}", "git clone https://deploy:{s}@gitlab.acme.io/a/b",
                                            "the deploy token {s} is read-only")),
        ("gitlab_runner_token", lambda: say("gl" + f"rt-{g.s(20, ALNUM + '_-')}", "gitlab-runner register --token {s}")),
        ("artifactory_token", lambda: say("AK" + f"Cp{g.s(69)}", "jfrog rt config --access-token {s}")),
        ("doppler_token", lambda: say("dp" + f".pt.{g.s(43)}", "doppler run with DOPPLER_TOKEN {s}")),
        ("pulumi_token", lambda: say("pu" + f"l-{g.s(40, HEX)}", "pulumi login with {s}")),
        ("databricks_token", lambda: say("da" + f"pi{g.s(32, HEX)}", "databricks configure --token {s}")),
        ("sentry_token", lambda: say("sn" + f"trys_{g.s(60, ALNUM)}", "sentry-cli login --auth-token {s}")),
        ("base64_user_pass_unpadded", lambda: say(base64.b64encode(f"ci-{g.s(4, LO)}:{g.s(13)}".encode()).decode().rstrip("="),
                                                  "my registry auth is {s} if you need it",
                                                  "use {s} for the mirror")),
        ("base64_user_pass_spaced", lambda: say(base64.b64encode(f"deploy:{g.s(6)} {g.s(7)}".encode()).decode(),
                                                "here are the creds: {s}", "auth blob {s}")),
        ("random_config_value", lambda: say(g.s(32), 'SESSION_SIGNING = "{s}"', "app.config['SIGNER'] = '{s}'",
                                            "webhook_hmac: {s}")),
        ("random_hex_config_value", lambda: say(g.s(64, HEX), "secret_key_base: {s}", 'RAILS_MASTER = "{s}"')),
    ]


def corpus(per_kind: int = 3, seed: int = 20261130) -> list[tuple[str, str, str]]:
    """``per_kind`` fresh secrets of every kind, each in one of its sentences."""
    g = _G(seed)
    out = []
    for kind, make in _recipes(g):
        for _ in range(per_kind):
            secret, sentence = make()
            out.append((kind, secret, sentence))
    return out


def leaked(secret: str, text: str) -> bool:
    """Whether ``secret`` (or, for multi-line ones, any of its lines) is in ``text``. A JSON
    dump escapes newlines, so each line is looked for on its own."""
    return any(part and part in text for part in secret.split("\n"))


def ordinary(half: str) -> list[str]:
    """The lines of ``secrets_ordinary_<half>.txt`` ("tune" or "report")."""
    from pathlib import Path

    path = Path(__file__).with_name(f"secrets_ordinary_{half}.txt")
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]
