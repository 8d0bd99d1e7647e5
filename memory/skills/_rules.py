"""The guard's rule table: one regex per suspicious pattern, with a category and a severity.

Rules run line by line on NFKC-normalized text, so every filler between keywords is
bounded (`.{0,N}`) — no rule can backtrack quadratically over a long line. Severity
guides the verdict: critical and high make a skill *dangerous*, medium makes it *caution*,
low is informational (a bare mention worth seeing in a report, never a reason to block).

Each rule is paired in the tests with an example it must flag and a benign look-alike it
must not (e.g. `curl ... | sh` versus `curl -fsSL URL -o file`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

__all__ = ["RULES", "GuardCategory", "Rule", "Severity"]

Severity: TypeAlias = Literal["critical", "high", "medium", "low"]
GuardCategory: TypeAlias = Literal[
    "exfiltration",
    "injection",
    "destructive",
    "persistence",
    "network",
    "obfuscation",
    "supply_chain",
    "privilege_escalation",
    "credential_exposure",
]


@dataclass(frozen=True, slots=True)
class Rule:
    """One pattern the guard looks for."""

    id: str
    category: GuardCategory
    severity: Severity
    pattern: re.Pattern[str]
    description: str
    kind: Literal["guard_rule"] = field(default="guard_rule", init=False)


_I = re.IGNORECASE
_SECRET_VAR = r"\$\{?[A-Za-z_]*(?:KEY|TOKEN|SECRET|PASSW(?:OR)?D|CREDENTIAL)"
_HOME = r"(?:~|\$HOME|\$\{HOME\}|/root|/home/[^/\s]{1,64})"
_WRITE = r"(?:>{1,2}\s*|\btee\s+(?:-a\s+)?|\bsed\s+-i\S{0,10}\s.{0,120}?\s)"
_SHELL = r"(?:sudo\s+(?:-\S+\s+){0,3})?(?:ba|z|da|k|fi)?sh\b"
_LOOPBACK = r"(?:localhost|127\.0\.0\.1|\[::1\])"
_AGENT_FILES = (
    r"(?:AGENTS\.md|CLAUDE\.md|GEMINI\.md|\.cursorrules|\.clinerules|\.windsurfrules|SOUL\.md|"
    r"MEMORY\.md|USER\.md|\.cursor/rules/|\.keel/config\.ya?ml)"
)


def _rule(
    rid: str, category: GuardCategory, severity: Severity, pattern: str, description: str, flags: int = _I
) -> Rule:
    return Rule(rid, category, severity, re.compile(pattern, flags), description)


# A table reads better with one rule per block than with one argument per line.
# fmt: off
RULES: tuple[Rule, ...] = (
    # ------------------------------------------------------------------ exfiltration
    _rule(
        "exfil-secret-in-url", "exfiltration", "critical",
        rf"\b(?:curl|wget|https?|fetch|iwr|Invoke-WebRequest)\b.{{0,200}}?https?://(?!{_LOOPBACK}[:/])"
        rf"[^\s\"'<>]{{0,300}}?{_SECRET_VAR}",
        "sends a secret environment variable inside a URL",
    ),
    _rule(
        "exfil-secret-in-body", "exfiltration", "critical",
        rf"\b(?:curl|wget)\b.{{0,200}}?\s(?:-d|--data(?:-\w+)?|-F|--form|--post-data|-T|--upload-file)"
        rf"[\s=]+\S{{0,80}}?{_SECRET_VAR}",
        "posts a secret environment variable as request data",
    ),
    _rule(
        "exfil-env-dump", "exfiltration", "critical",
        r"\b(?:env|printenv|export\s+-p)\s*\|\s*(?:curl|wget|nc|ncat|netcat|base64|xxd)\b"
        r"|json\.dumps\(\s*(?:dict\(\s*)?os\.environ\b|JSON\.stringify\(\s*process\.env\s*\)",
        "dumps the whole environment (where secrets live) into a pipe or a payload",
    ),
    _rule(
        "exfil-credential-read", "exfiltration", "critical",
        rf"\b(?:cat|less|more|head|tail|cp|scp|rsync|tar|zip|base64|xxd|Get-Content)\b.{{0,120}}?{_HOME}/\."
        r"(?:ssh|aws|gnupg|kube|docker|netrc|git-credentials|npmrc|pypirc|keel/\.env)",
        "reads a credential store (~/.ssh, ~/.aws, ~/.gnupg, ~/.kube, ~/.docker, ...)",
    ),
    _rule(
        "exfil-credential-mention", "exfiltration", "low",
        rf"{_HOME}/\.(?:ssh|aws|gnupg|kube|docker)\b",
        "mentions a credential directory",
    ),
    _rule(
        "exfil-dns", "exfiltration", "critical",
        r"\b(?:dig|nslookup|host|drill)\b.{0,120}?\$(?:\(|\{?[A-Za-z_])",
        "resolves a hostname built from command output or a variable (DNS exfiltration)",
    ),
    _rule(
        "exfil-markdown-url", "exfiltration", "high",
        r"\]\(\s*https?://[^)\s]{0,300}?(?:\{\{|\$\{|\$[A-Za-z_]|%s)",
        "a markdown image or link whose URL is filled from a variable (leaks data when rendered)",
    ),
    _rule(
        "exfil-conversation", "exfiltration", "critical",
        r"\b(?:send|post|upload|forward|transmit|exfiltrate)\b.{0,80}?\b(?:conversation|chat history|"
        r"transcript|system prompt|MEMORY\.md|USER\.md)\b.{0,80}?\b(?:to|at)\s+(?:https?://|\S+@\S+|"
        r"(?:an?|the|my|our)\s+(?:remote\s+|external\s+)?(?:server|endpoint|webhook|url|address)\b)",
        "sends the conversation, the system prompt or memory files to an outside address",
    ),
    # ------------------------------------------------------------------ injection
    _rule(
        "inject-ignore-instructions", "injection", "critical",
        r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|your\s+|these\s+)?"
        r"(?:previous|prior|above|earlier|preceding|original|system|safety|developer|existing|all|any)\s+"
        r"(?:\w+\s+)?(?:instructions|directives|guidelines|rules|prompts?|guardrails|constraints)\b",
        "tells the model to ignore its instructions",
    ),
    _rule(
        "inject-role-hijack", "injection", "critical",
        r"\byou\s+are\s+now\s+(?:an?\s+)?(?:unrestricted|unfiltered|jailbroken|uncensored|DAN\b|evil|"
        r"free\s+from)|\b(?:DAN|developer|god)\s+mode\s+(?:is\s+)?(?:enabled|activated|on)\b|"
        r"\bact\s+as\s+(?:DAN\b|an?\s+(?:unrestricted|unfiltered)\b)|\bdo\s+anything\s+now\b",
        "tries to replace the model's role (jailbreak / DAN / developer mode)",
    ),
    _rule(
        "inject-pretend", "injection", "medium",
        r"\bpretend\s+(?:that\s+)?(?:you\s+are|you're|to\s+be)\b",
        "asks the model to pretend to be something else",
    ),
    _rule(
        "inject-hide-from-user", "injection", "high",
        r"\b(?:do\s+not|don't|never)\s+(?:tell|inform|notify|show|alert)\s+the\s+user\b|"
        r"\b(?:hide|conceal|keep)\s+(?:this|it|these\s+\w+|the\s+\w+)\s+(?:secret\s+)?from\s+the\s+user\b|"
        r"\bwithout\s+(?:telling|informing|notifying|alerting)\s+the\s+user\b",
        "tells the model to keep something from the user",
    ),
    _rule(
        "inject-system-prompt", "injection", "critical",
        r"\b(?:reveal|print|output|show|repeat|dump|leak)\s+(?:me\s+)?(?:your|the)\s+(?:full\s+|entire\s+|"
        r"hidden\s+|original\s+)?(?:system\s+prompt|hidden\s+instructions|initial\s+instructions)\b|"
        r"\b(?:new|updated)\s+system\s+prompt\s*:|\b(?:override|replace)\s+(?:the\s+|your\s+)?system\s+prompt\b",
        "overrides or leaks the system prompt",
    ),
    _rule(
        "inject-unobserved", "injection", "high",
        r"\bwhen\s+(?:no\s+one|nobody)\s+is\s+(?:watching|looking)|\bwhen\s+unobserved\b|"
        r"\bif\s+the\s+user\s+(?:is\s+not|isn't)\s+(?:watching|looking|paying\s+attention)",
        "conditions behaviour on the user not watching",
    ),
    _rule(
        "inject-hidden-html", "injection", "high",
        r"<(?:div|span|p|section)\b[^>]{0,200}style\s*=\s*[\"'][^\"']{0,200}(?:display\s*:\s*none|"
        r"visibility\s*:\s*hidden|font-size\s*:\s*0(?:px)?\s*[;\"'])|"
        r"<!--.{0,200}?\b(?:ignore|disregard|you\s+must|assistant\s*:|system\s*:)",
        "hides instructions in invisible HTML or an HTML comment",
    ),
    _rule(
        "inject-fake-authority", "injection", "high",
        r"\b(?:new|updated|official)\s+(?:policy|instructions?|directive|update)\s+from\s+(?:anthropic|"
        r"openai|the\s+(?:developers?|administrators?|system|keel\s+team))\b|"
        r"\bthis\s+(?:message|instruction)\s+(?:is|comes)\s+from\s+(?:anthropic|openai|the\s+system)\b",
        "claims to be a policy or update from the model's makers",
    ),
    _rule(
        "inject-translate-execute", "injection", "high",
        r"\b(?:translate|decode)\b.{0,80}?\b(?:and|then)\s+(?:execute|run|follow|obey)\b",
        "asks the model to decode or translate text and then act on it",
    ),
    _rule(
        "inject-educational", "injection", "medium",
        r"\bfor\s+(?:purely\s+)?educational\s+purposes\s+only\b",
        "the 'for educational purposes only' excuse",
    ),
    # ------------------------------------------------------------------ destructive
    _rule(
        "destroy-rm-root", "destructive", "critical",
        r"\brm\s+(?:-{1,2}[\w-]+\s+){0,4}-{1,2}(?:[a-zA-Z]*[rR][a-zA-Z]*|recursive)(?:\s+-{1,2}[\w-]+){0,4}"
        r"\s+(?:--\s+)?[\"']?(?:/|/\*|~|~/|~/\*|\$HOME|\$\{HOME\}|\$HOME/\*|/(?:bin|boot|dev|etc|home|lib|"
        r"lib64|opt|root|sbin|srv|usr|var)(?:/\*)?)[\"']?(?=\s|$|;|&|\|)",
        "recursively deletes the root, home or a system directory",
    ),
    _rule(
        "destroy-disk", "destructive", "critical",
        r"\bmkfs(?:\.\w+)?\s|\bdd\b.{0,120}?\bof=/dev/(?:sd|hd|nvme|xvd|vd|disk|mmcblk)|"
        r">\s*/dev/(?:sd[a-z]|nvme\d|hd[a-z]|disk\d)|\bshred\b.{0,80}?/dev/|\bwipefs\b",
        "formats or overwrites a disk device",
    ),
    _rule(
        "destroy-etc-write", "destructive", "high",
        rf"{_WRITE}/etc/",
        "writes into /etc",
    ),
    _rule(
        "destroy-chmod-777", "destructive", "high",
        r"\bchmod\s+(?:-\w+\s+){0,3}(?:0?777|a\+rwx|ugo\+rwx)\b",
        "makes files world-writable (chmod 777)",
    ),
    _rule(
        "destroy-fork-bomb", "destructive", "critical",
        r":\(\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:",
        "a shell fork bomb",
    ),
    _rule(
        "destroy-drop-database", "destructive", "medium",
        r"\bDROP\s+(?:DATABASE|SCHEMA)\b",
        "drops a whole database",
    ),
    # ------------------------------------------------------------------ persistence
    _rule(
        "persist-crontab", "persistence", "high",
        r"\|\s*crontab\b|\bcrontab\s+(?:-r\b|-e\b|-(?=\s|$)|(?!-)\S)|/etc/cron\.|/var/spool/cron",
        "installs or edits a crontab",
    ),
    _rule(
        "persist-shell-rc", "persistence", "critical",
        rf"{_WRITE}[\"']?{_HOME}/\.(?:bashrc|bash_profile|bash_login|profile|zshrc|zprofile|zshenv|"
        r"config/fish/config\.fish)\b",
        "writes into a shell start-up file",
    ),
    _rule(
        "persist-authorized-keys", "persistence", "critical",
        r"(?:>{1,2}\s*|\btee\s+(?:-a\s+)?|\bcp\s+.{0,120}?)[\"']?\S{0,120}authorized_keys\b",
        "adds an SSH key to authorized_keys",
    ),
    _rule(
        "persist-authorized-keys-mention", "persistence", "low",
        r"\bauthorized_keys\b",
        "mentions authorized_keys",
    ),
    _rule(
        "persist-service", "persistence", "high",
        r"/etc/systemd/system/|\.config/systemd/user/|Library/Launch(?:Agents|Daemons)|/etc/init\.d/|"
        r"\bupdate-rc\.d\b|\blaunchctl\s+(?:load|bootstrap)\b",
        "installs a system service or launch agent",
    ),
    _rule(
        "persist-service-enable", "persistence", "medium",
        r"\bsystemctl\s+(?:--user\s+)?enable\b",
        "enables a service at boot",
    ),
    _rule(
        "persist-git-config", "persistence", "high",
        r"\bgit\s+config\s+(?:--global|--system)\s+(?:core\.hookspath|core\.sshcommand|core\.pager|"
        r"core\.editor|credential\.helper|url\.\S+\.insteadof|alias\.\S+\s+[\"']?!)",
        "changes global git behaviour (hooks, ssh command, credential helper, URL rewrites)",
    ),
    _rule(
        "persist-agent-config-write", "persistence", "critical",
        rf"(?:{_WRITE}|\b(?:cp|mv)\s+\S+\s+)[\"']?(?:\S{{0,200}}/)?{_AGENT_FILES}",
        "writes into an agent instruction or memory file from the shell",
    ),
    _rule(
        "persist-agent-config-prose", "persistence", "high",
        r"\b(?:add|append|write|insert|put|inject)\b.{0,80}?\b(?:to|into|in)\s+(?:the\s+)?(?:user'?s\s+|your\s+)?"
        rf"[\"'`]?{_AGENT_FILES}",
        "tells the model to change an agent instruction or memory file",
    ),
    _rule(
        "persist-agent-config-mention", "persistence", "low",
        r"\b(?:AGENTS\.md|CLAUDE\.md|\.cursorrules|\.clinerules|SOUL\.md)",
        "mentions an agent instruction file",
    ),
    # ------------------------------------------------------------------ network
    _rule(
        "net-reverse-shell", "network", "critical",
        r"/dev/(?:tcp|udp)/|\b(?:nc|ncat|netcat)\b.{0,80}?\s-(?:e|c)\s|\bsocat\b.{0,120}?\bexec:|"
        r"\bmkfifo\b.{0,120}?\b(?:nc|ncat|netcat)\b|\bpty\.spawn\(|"
        r"socket\.socket\(.{0,200}?(?:subprocess|os\.dup2)|\bos\.dup2\(\s*\w+\.fileno\(\)",
        "opens a reverse shell",
    ),
    _rule(
        "net-tunnel", "network", "high",
        r"\bngrok\s+(?:http|tcp|tls|start)\b|\bcloudflared\s+(?:tunnel|access\s+tcp)\b|"
        r"\bssh\s+(?:-\w+\s+){0,4}-R\s*\d|\blt\s+--port\b|\bserveo\.net\b|\blocalhost\.run\b|\bbore\s+local\b",
        "exposes a local port through a tunnel",
    ),
    _rule(
        "net-drop-service", "network", "high",
        r"\b(?:webhook\.site|requestbin\.\w+|pipedream\.net|hookbin\.com|pastebin\.com|paste\.ee|"
        r"hastebin\.com|transfer\.sh|0x0\.st|interact\.sh|burpcollaborator\.net|ngrok(?:-free)?\.(?:io|app|dev))\b",
        "talks to a webhook, paste or file-drop service",
    ),
    _rule(
        "net-raw-ip-port", "network", "medium",
        r"(?<![\w.])(?!127\.)(?!0\.0\.0\.0)(?:\d{1,3}\.){3}\d{1,3}:\d{2,5}\b",
        "a hard-coded IP address and port",
    ),
    _rule(
        "net-bind-all", "network", "medium",
        r"(?<![\w.])0\.0\.0\.0(?![\w.])",
        "listens on every network interface",
    ),
    # ------------------------------------------------------------------ obfuscation
    _rule(
        "obfusc-decode-exec", "obfuscation", "critical",
        rf"\bbase64\s+(?:-d|--decode|-D)\b.{{0,120}}?\|\s*{_SHELL}|"
        r"\b(?:eval|exec)\b.{0,40}?\$\(.{0,120}?base64\s+(?:-d|--decode|-D)\b|"
        r"\b(?:exec|eval)\s*\(\s*(?:base64\.b64decode|codecs\.decode|bytes\.fromhex|zlib\.decompress|"
        r"marshal\.loads|__import__\(\s*[\"']base64)|\beval\s*\(\s*(?:atob|Buffer\.from)\(",
        "decodes hidden text and executes it",
    ),
    _rule(
        "obfusc-escape-chain", "obfuscation", "high",
        r"(?:\\x[0-9a-fA-F]{2}){8,}|(?:\\u[0-9a-fA-F]{4}){6,}",
        "a long chain of hex or unicode escapes",
        0,
    ),
    _rule(
        "obfusc-char-building", "obfuscation", "high",
        r"(?:\bchr\(\s*\d+\s*\)\s*\+\s*){3,}\bchr\(|String\.fromCharCode\((?:\s*\d+\s*,){5,}",
        "builds a string character by character",
    ),
    _rule(
        "obfusc-eval-string", "obfuscation", "medium",
        r"\b(?:eval|exec)\s*\(\s*(?:[\"']|f[\"']|compile\()",
        "evaluates code from a string",
    ),
    _rule(
        "obfusc-invisible-unicode", "obfuscation", "high",
        "[\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]",
        "an invisible or bidirectional-override Unicode character",
        0,
    ),
    # ------------------------------------------------------------------ supply chain
    _rule(
        "supply-pipe-to-shell", "supply_chain", "critical",
        rf"\b(?:curl|wget|fetch)\b[^|\n]{{0,300}}\|\s*{_SHELL}|"
        r"\b(?:curl|wget)\b[^|\n]{0,300}\|\s*(?:sudo\s+)?(?:python[0-9.]*|perl|ruby|node)\s*-?\s*$|"
        r"\b(?:ba|z)?sh\s+<\(\s*(?:curl|wget)\b|\b(?:ba|z)?sh\s+-c\s+[\"']?\$\(\s*(?:curl|wget)\b|"
        r"\b(?:iex|Invoke-Expression)\b.{0,80}?\b(?:iwr|irm|Invoke-WebRequest|Invoke-RestMethod|"
        r"DownloadString)\b|\b(?:iwr|irm|Invoke-WebRequest|Invoke-RestMethod)\b.{0,200}?\|\s*iex\b",
        "pipes a downloaded script straight into an interpreter",
    ),
    _rule(
        "supply-fetch-exec", "supply_chain", "critical",
        r"\bexec\s*\(\s*(?:requests\.get|urllib\.request\.urlopen|urlopen)\(",
        "downloads code and executes it",
    ),
    _rule(
        "supply-untrusted-index", "supply_chain", "high",
        r"--trusted-host\b|--(?:extra-)?index-url\s+http://|\bnpm\s+config\s+set\s+registry\s+http://",
        "installs packages from an unverified or plain-HTTP index",
    ),
    _rule(
        "supply-pip-remote", "supply_chain", "medium",
        r"\bpip3?\s+install\s+(?:-\S+\s+){0,4}[\"']?(?:git\+|https?://)",
        "installs a Python package straight from a URL",
    ),
    _rule(
        "supply-pip-unpinned", "supply_chain", "medium",
        r"\bpip3?\s+install\s+(?:-{1,2}(?!r\b|e\b|requirement\b|editable\b)[\w-]+\s+){0,4}(?![-.])"
        r"[A-Za-z0-9][\w.\-\[\],]*(?=\s|$|;|&)",
        "installs a Python package without pinning a version",
    ),
    _rule(
        "supply-npm-global", "supply_chain", "medium",
        r"\bnpx\s+(?:-y|--yes)\b|\bnpm\s+(?:install|i)\s+(?:-\S+\s+){0,3}-g\b",
        "installs or runs an npm package globally without a prompt",
    ),
    _rule(
        "supply-remote-source", "supply_chain", "low",
        r"\bgit\s+clone\b|\bdocker\s+pull\b|\buvx\s|\buv\s+run\s+--with\b",
        "fetches code or images from a remote source",
    ),
    # ------------------------------------------------------------------ privilege escalation
    _rule(
        "privesc-sudoers", "privilege_escalation", "critical",
        r"\bNOPASSWD\b|(?:>{1,2}\s*|\btee\s+(?:-a\s+)?)/etc/sudoers|\bvisudo\b",
        "grants password-less sudo or edits sudoers",
    ),
    _rule(
        "privesc-setuid", "privilege_escalation", "high",
        r"\bchmod\s+(?:-\w+\s+){0,3}(?:[ugoa]*\+[rwx]*s|[2467][0-7]{3})\b|"
        r"\bsetcap\s+\S*cap_(?:setuid|sys_admin|dac_override)",
        "sets the setuid/setgid bit or a powerful capability",
    ),
    _rule(
        "privesc-root-shell", "privilege_escalation", "high",
        r"\bsudo\s+(?:-\w+\s+){0,3}(?:-i\b|-s\b|su\b|bash\b|sh\b|zsh\b)|\bsu\s+(?:-\s+)?root\b|\bsu\s+-\s*$",
        "opens a root shell",
    ),
    _rule(
        "privesc-group", "privilege_escalation", "high",
        r"\busermod\s+(?:-\w+\s+){0,3}-a?G\s+(?:\S{0,60},)?(?:sudo|wheel|admin|root|docker)\b|\bpasswd\s+root\b",
        "adds a user to an administrative group or changes root's password",
    ),
    _rule(
        "privesc-sudo", "privilege_escalation", "medium",
        r"\bsudo\s+\S.{0,60}",
        "runs a command as root",
    ),
    # ------------------------------------------------------------------ credential exposure
    _rule(
        "cred-private-key", "credential_exposure", "critical",
        r"-----BEGIN (?:[A-Z0-9]+ ){0,2}PRIVATE KEY-----",
        "an embedded private key",
        0,
    ),
    _rule(
        "cred-token", "credential_exposure", "critical",
        r"\bghp_[A-Za-z0-9]{36}\b|\bgithub_pat_[A-Za-z0-9_]{40,}|\bgh[ousr]_[A-Za-z0-9]{36}\b|"
        r"\bsk-ant-[A-Za-z0-9_-]{20,}|\bsk-(?:proj-)?[A-Za-z0-9_-]{32,}|\bAKIA[0-9A-Z]{16}\b|"
        r"\bglpat-[A-Za-z0-9_-]{20,}|\bxox[abprs]-[A-Za-z0-9-]{10,}|\bAIza[0-9A-Za-z_-]{35}\b",
        "an embedded API token (GitHub, OpenAI, Anthropic, AWS, GitLab, Slack, Google)",
        0,
    ),
    _rule(
        "cred-hardcoded", "credential_exposure", "high",
        r"(?:api[_-]?key|secret[_-]?key|client[_-]?secret|password|passwd|access[_-]?token|auth[_-]?token)"
        r"[\"']?\s*[:=]\s*[\"'](?![<{$%])(?!(?:your|my|xxx|changeme|example|placeholder|redacted|dummy|"
        r"test|\*))[^\"'\s]{12,}[\"']",
        "a hard-coded password or key",
    ),
)
# fmt: on
