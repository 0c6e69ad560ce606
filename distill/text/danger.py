"""Instructions an agent must not follow on a memory's word alone.

Every agent recalls the shared table and some can run shell commands, so a memory is an
instruction with the owner's authority. :func:`assess` names what a text would make an agent
do that cannot be undone or that hands the machine to someone else:

- ``destructive``: delete or overwrite (``rm -rf`` but of a project's build output such as
  ``node_modules`` or ``.venv``, ``git push --force``, ``git reset --hard``,
  ``chmod -R 777``, ``mkfs``, ``dd of=/dev/…``, ``DROP TABLE``, ``terraform destroy``, 删除 …);
- ``remote_code``: fetch code and run it (``curl … | sh``, ``bash <(curl …)``, ``iex (iwr …)``);
- ``exfiltration``: send keys or secret files somewhere (``~/.ssh/id_rsa``, ``.env``,
  ``/etc/passwd``, credentials … together with an upload, a POST, an address);
- ``disable_checks``: turn off what guards the work (``--no-verify``, ``verify=False``,
  ``--insecure``, ``setenforce 0``, "disable the hooks", 跳过检查 …);
- ``injection``: prompt-injection phrasing ("ignore previous instructions", "you are now in
  developer mode", 忽略之前的指令 …). Such text never becomes a memory, whoever wrote it.

What the distiller and the store do with the answer is :mod:`distill.trust`'s: a memory with
one of the first four is kept only from the owner, and then carries :data:`MARKER` in its text
and ``caution`` in its metadata, so an agent asks before acting on it.

A command that is named only to be forbidden ("never run ``rm -rf /``", 不要 …) is not an
instruction to run it: a match right after a negation is not counted. The text is read as a
person would see it (:func:`distill.text.invisible.visible`), so a zero-width character
inside ``rm`` hides nothing.
"""

from __future__ import annotations

import re

from .invisible import visible

# what an agent reads first; the kinds follow, in English words
MARKER = "[Caution: ask the owner before acting on this"
_LABELS = {"destructive": "deletes or overwrites", "remote_code": "runs downloaded code",
           "exfiltration": "sends secrets out", "disable_checks": "disables checks"}

_I = re.IGNORECASE
# build output a project makes again (``rm -rf node_modules`` is a routine fix, not a loss)
_REBUILT = (r"(?:\./)?(?:node_modules|\.?venv|build|dist|target|out|coverage|__pycache__|\.pytest_cache|"
            r"\.mypy_cache|\.ruff_cache|\.next|\.nuxt|\.turbo|\.parcel-cache|\.gradle|\.tox|\.eggs|[\w.-]+\.egg-info|"
            r"package-lock\.json|yarn\.lock|pnpm-lock\.yaml)/?")
_AFTER = r"(?:\s*(?:[`'\";&|)]|$)|[.,]?\s+(?:and|then|before|after|to|so|again)\b|[.,](?:\s|$))"
_DESTRUCTIVE = re.compile(
    r"\brm\s+(?:-[a-zA-Z]*[rR][a-zA-Z]*|--recursive)\b(?!(?:\s+" + _REBUILT + r")+" + _AFTER + r")|"
    r"\brm\s+-[a-zA-Z]*f[a-zA-Z]*\s+[~/*$]|"
    r"\brmdir\s+/s\b|\bdel\s+/[sfq]\b|\bRemove-Item\b[^\n]{0,80}-Recurse|"
    r"\bgit\s+push\b[^\n]{0,80}?(?:--force\b|\s-f\b|\s\+\w)|\bgit\s+reset\s+--hard\b|\bgit\s+clean\s+-[a-z]*f|"
    r"\bgit\s+branch\s+-D\b|\bgit\s+filter-branch\b|"
    r"\bchmod\s+(?:-R\s+)?0?777\b|\bchown\s+-R\b[^\n]{0,40}\s/(?:\s|$|[`'\"])|"
    r"\bmkfs(?:\.\w+)?\b|\bdd\s+[^\n]{0,80}\bof=/dev/|>\s*/dev/(?:sd|nvme|hd|disk)\w*|\bformat\s+[a-z]:|"
    r"\b(?:drop|truncate)\s+(?:table|database|schema)\b|\bdelete\s+from\s+\w+\s*(?:;|$|`)|"
    r"\bterraform\s+destroy\b|\bkubectl\s+delete\b|\bdocker\s+(?:system|volume)\s+prune\b|"
    r"\b(?:delete|wipe|erase|overwrite|shred)\b[^\n.。]{0,30}(?:`?[~/][\w./-]+|\ball (?:the )?(?:files|data))|"
    r"(?:删除|删掉|清空|抹掉|格式化|覆盖)[^\n。]{0,20}(?:`?[~/][\w./-]+|所有|全部)",
    _I,
)
_SHELLS = r"(?:sudo\s+)?(?:-\w+\s+)*(?:ba|z|da|k|fi)?sh\b|python[\d.]*\b|perl\b|ruby\b|node\b|iex\b|pwsh\b|powershell\b"
_REMOTE_CODE = re.compile(
    r"\b(?:curl|wget|iwr|irm|fetch|Invoke-WebRequest|Invoke-RestMethod)\b[^\n|]{0,200}\|\s*(?:" + _SHELLS + r")|"
    r"(?:ba|z)?sh\s+(?:-c\s+)?[\"']?\s*(?:<\(|\$\()\s*(?:curl|wget)\b|"
    r"\beval\s+[\"']?\$\(\s*(?:curl|wget)\b|\biex\s*\(\s*(?:iwr|irm|New-Object|Invoke-)|"
    r"\bDownloadString\s*\(|\bpython[\d.]*\s+-c\s+[\"'][^\n]{0,80}urlopen",
    _I,
)
_SECRET_THING = (r"(?:id_(?:rsa|ed25519|ecdsa|dsa)\b|\.ssh\b|\.env\b|\.aws/credentials|\.npmrc\b|\.pypirc\b|"
                 r"\.netrc\b|\.kube/config|/etc/(?:passwd|shadow)\b|credentials?\b|api[ _-]?keys?\b|tokens?\b|"
                 r"secrets?\b|private keys?\b|passwords?\b|cookies?\b|私钥|密钥|密码|令牌|凭证|凭据)")
_OUTBOUND = (r"(?:\bupload|\bsend|\bpost\b|\bcurl\s+-X\s*POST|\bcurl\b[^\n]{0,60}(?:-d|--data[\w-]*|-F|-T)\s*@|"
             r"\bscp\b|\brsync\b|\bnc\b|\bmail\b|\bpaste\b|\bexfiltrat|\bforward|\bcopy\b[^\n]{0,40}\b(?:to|into)\b|"
             r"\binto\b[^\n]{0,20}(?:/tmp\b|shared?\b|public\b)|发到|发送|上传|传到|转发|贴到|复制到)")
_EXFILTRATION = re.compile(
    _SECRET_THING + r"[^\n]{0,80}?" + _OUTBOUND + r"|" + _OUTBOUND + r"[^\n]{0,80}?" + _SECRET_THING +
    r"|-d\s*@/etc/|--data(?:-binary)?\s*@~?/",
    _I,
)
_DISABLE_CHECKS = re.compile(
    r"--no-verify\b|--no-gpg-sign\b|\bverify\s*=\s*False\b|--insecure\b|--no-check-certificate\b|"
    r"--trusted-host\b|\bPIP_TRUSTED_HOST\b|\bNODE_TLS_REJECT_UNAUTHORIZED\s*=\s*['\"]?0|\bGIT_SSL_NO_VERIFY\b|"
    r"\bsslVerify\s*(?:=\s*)?false\b|\bStrictHostKeyChecking\s*=?\s*no\b|\bsetenforce\s+0\b|\bufw\s+disable\b|"
    r"--dangerously-skip-permissions\b|--skip-(?:checks|tests|verification|hooks)\b|\bHUSKY\s*=\s*0\b|"
    r"\b(?:disable|skip|bypass|turn off|switch off)\s+(?:all\s+|the\s+|every\s+)?(?:pre-commit\s+|git\s+)?"
    r"(?:checks?|hooks?|verification|tests?|linters?|ci|signature checks?|tls|ssl|certificate checks?|"
    r"security checks?|the firewall|firewall|antivirus|sandbox)\b|"
    r"(?:跳过|关闭|禁用|绕过)(?:所有|全部)?的?(?:检查|校验|验证|测试|钩子|hook|防火墙|签名|沙箱)",
    _I,
)
_INJECTION = re.compile(
    r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|the\s+|your\s+)*(?:previous|prior|above|earlier|"
    r"preceding|system|original)\s+(?:instructions?|prompts?|rules?|messages?|directions?|guidelines?)\b|"
    r"\byou are now (?:in )?(?:developer|dev|god|jailbreak|unrestricted|admin|root) mode\b|\bDAN mode\b|"
    r"\bsystem override\b|\bnew system prompt\b|\bjailbreak\b|"
    r"\b(?:do not|don't|never) (?:tell|inform|alert|show) the (?:user|owner|human)\b|\bwithout telling the (?:user|owner)\b|"
    r"\bapprove (?:all |every |any )?(?:sudo|permission|tool) (?:requests?|prompts?)\b|"
    r"(?:忽略|无视|忘记|忘掉)(?:掉)?(?:之前|以上|前面|先前|上面|此前|所有|一切)[^\n。]{0,6}(?:指令|指示|说明|规则|提示|要求)|"
    r"(?:你现在是|进入)[^\n。]{0,6}(?:开发者模式|越狱|上帝模式)|不要告诉(?:用户|主人)",
    _I,
)
_KINDS = (("injection", _INJECTION), ("remote_code", _REMOTE_CODE), ("exfiltration", _EXFILTRATION),
          ("destructive", _DESTRUCTIVE), ("disable_checks", _DISABLE_CHECKS))
_MARKS = re.compile(r"\[REDACTED:[\w-]+\]")  # a redaction's kind ("url_token") is no secret named
# a command named only to forbid it: "never run `rm -rf /`", "don't use --no-verify", "不要…"
_NEGATION = re.compile(r"(?:\b(?:never|don't|do not|must not|mustn't|should not|shouldn't|avoid|stop|no longer|"
                       r"not)\b|不要|别|禁止|不准|不许|切勿|绝不|不能|不得)[^\n.;。；!！?？]{0,40}$", _I)


def assess(text: str) -> list[str]:
    """The kinds of dangerous instruction ``text`` holds, in a fixed order; [] for none."""
    text = _MARKS.sub(" ", visible(text)[0])
    found = []
    for kind, pattern in _KINDS:
        for m in pattern.finditer(text):
            if kind == "injection" or not _NEGATION.search(text, max(0, m.start() - 60), m.start()):
                found.append(kind)
                break
    return found


def marked(text: str, kinds: list[str]) -> str:
    """``text`` with the visible caution marker first (once)."""
    if text.startswith(MARKER):
        return text
    what = ", ".join(_LABELS[k] for k in kinds if k in _LABELS)
    return f"{MARKER}: {what}] {text}"
