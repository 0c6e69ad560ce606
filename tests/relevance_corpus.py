"""A labelled store for search relevance: a few hundred memories on mixed topics (English,
Chinese, mixed, exact error codes) and queries that name the memory a person expects first.

``TARGETS`` are hand-written memories a query should find. ``filler()`` adds a few hundred
plausible neighbours (same tools, same shapes, other facts), so a query has to pick its memory
out of a crowd. ``HELD_OUT`` was written before the ranking code was run on any of it and is the
half the benchmark reports on; ``DEV`` was used while tuning. ``UNRELATED`` queries have no
answer in the store: search must return nothing for them.
"""

from __future__ import annotations

import itertools

K = "\nKeywords (zh): "

TARGETS: dict[str, str] = {
    "pnpm_lock": "Pitfall: CI install failed with ERR_PNPM_OUTDATED_LOCKFILE after package.json changed. Cause: pnpm-lock.yaml not regenerated. Fix: run pnpm install locally and commit the lockfile." + K + "锁文件过期; pnpm; 持续集成",
    "mongo_dup": "Pitfall: inserting users failed with E11000 duplicate key error on the email index. Fix: upsert by email instead of insert." + K + "唯一索引; 重复键; MongoDB",
    "eaddrinuse": "Pitfall: dev server failed with EADDRINUSE on port 3000 because an old node process kept running. Fix: kill the process listening on 3000 (lsof -i :3000) before restarting." + K + "端口占用; 开发服务器; 进程",
    "uv_pref": "Preference: use uv instead of pip for Python dependencies in every project." + K + "依赖管理; uv; 偏好",
    "pg_conn": "Pitfall: Postgres refused connections with 'FATAL: sorry, too many clients already'. Cause: each worker opened its own pool. Fix: share one pgbouncer pool with max_client_conn 200." + K + "连接数过多; 连接池; PostgreSQL",
    "k8s_oom": "Pitfall: the ingest pod restarted with OOMKilled (exit code 137). Fix: raise the memory limit to 2Gi and stream files instead of loading them whole." + K + "内存溢出; Kubernetes; 容器重启",
    "git_crlf": "Decision: set git config core.autocrlf=input on Windows machines so shell scripts keep LF line endings." + K + "换行符; git 配置; Windows",
    "docker_m1": "Pitfall: docker build on Apple Silicon produced arm64 images that crashed on the amd64 servers with 'exec format error'. Fix: build with --platform linux/amd64." + K + "镜像架构; Docker; 苹果芯片",
    "ts_strict": "Decision: the frontend enables TypeScript strict mode and noUncheckedIndexedAccess in tsconfig.json." + K + "严格模式; TypeScript; 类型检查",
    "redis_ttl": "Fact: session keys in Redis expire after 30 minutes (TTL 1800) and are refreshed on every request." + K + "会话过期; Redis; 缓存",
    "feishu_bot": "Fact: the Feishu bot webhook rejects messages larger than 20 KB; long reports are sent as a file instead." + K + "飞书机器人; 消息大小; 文件发送",
    "cn_deploy": "决定：部署到生产环境之前必须先在预发环境跑完整的回归测试。" + K + "部署流程; 预发环境; 回归测试",
    "cn_db_migrate": "踩坑：数据库迁移脚本在生产上锁表二十分钟。原因：在大表上直接加了带默认值的列。修复：先加可空列，再分批回填。" + K + "数据库迁移; 锁表; 分批回填",
    "cn_review": "偏好：代码评审意见用中文写，提交信息用英文写。" + K + "代码评审; 提交信息; 语言偏好",
    "cn_backup": "事实：NAS 每天凌晨三点把照片目录备份到对象存储，保留九十天。" + K + "备份; 对象存储; 照片",
    "mixed_gemini": "Pitfall: Gemini API calls returned 429 RESOURCE_EXHAUSTED during the nightly batch. Fix: lower concurrency to 2 and honour Retry-After." + K + "限流; 并发; Gemini",
    "mixed_wechat": "Fact: 微信小程序 upload requests must use the domain listed in the mini-program console, otherwise wx.uploadFile fails with 'url not in domain list'." + K + "微信小程序; 域名白名单; 上传",
    "ssl_cert": "Pitfall: curl failed with 'SSL certificate problem: unable to get local issuer certificate' inside the corporate network. Fix: add the corporate root CA to /usr/local/share/ca-certificates and run update-ca-certificates." + K + "证书; 企业网络; 根证书",
    "pytest_async": "Pitfall: async tests were silently skipped with 'PytestUnhandledCoroutineWarning'. Fix: install pytest-asyncio and set asyncio_mode = auto." + K + "异步测试; pytest; 跳过",
    "npm_eresolve": "Pitfall: npm install failed with ERESOLVE unable to resolve dependency tree after upgrading React to 19. Fix: upgrade @testing-library/react to 16 instead of using --legacy-peer-deps." + K + "依赖冲突; npm; React",
    "rust_borrow": "Pitfall: error[E0502] cannot borrow `cache` as mutable because it is also borrowed as immutable in the parser loop. Fix: clone the key before calling cache.insert." + K + "借用检查; Rust; 可变借用",
    "go_nil_map": "Pitfall: the Go service panicked with 'assignment to entry in nil map' in the metrics collector. Fix: initialise the map with make() in the constructor." + K + "空映射; Go; 恐慌",
    "java_heap": "Pitfall: the Gradle build died with java.lang.OutOfMemoryError: Java heap space. Fix: set org.gradle.jvmargs=-Xmx4g in gradle.properties." + K + "堆内存; Gradle; Java",
    "nginx_413": "Pitfall: uploads over 1 MB failed with 413 Request Entity Too Large from nginx. Fix: set client_max_body_size 50m in the server block." + K + "上传大小; nginx; 请求过大",
    "cors": "Pitfall: the browser blocked API calls with 'No Access-Control-Allow-Origin header' after moving the frontend to app.example.org. Fix: add that origin to the API's CORS allow-list." + K + "跨域; CORS; 前端",
    "cron_tz": "Pitfall: the daily report cron ran at 08:00 UTC instead of 08:00 Beijing time. Fix: set CRON_TZ=Asia/Shanghai in the crontab." + K + "时区; 定时任务; 北京时间",
    "s3_403": "Pitfall: S3 uploads returned 403 AccessDenied after bucket encryption was turned on. Fix: grant kms:GenerateDataKey to the uploader role." + K + "权限; S3; 加密",
    "tf_lock": "Pitfall: terraform apply hung on 'Acquiring state lock' after a cancelled run. Fix: terraform force-unlock with the lock id, after checking nobody else is applying." + K + "状态锁; Terraform; 解锁",
    "sqlite_locked": "Pitfall: SQLite raised 'database is locked' when the web app and the cron job wrote at once. Fix: enable WAL mode and set busy_timeout to 5000 ms." + K + "数据库锁; SQLite; 并发写入",
    "vim_pref": "Preference: the user edits config files with vim and wants commands shown as vim keystrokes, not nano." + K + "编辑器; vim; 偏好",
    "tabs_pref": "Preference: Go code uses gofmt defaults; Python code uses 4 spaces and a line length of 100." + K + "代码风格; 缩进; 行宽",
    "release_fri": "Decision: no production releases on Fridays after 15:00; hotfixes need a second reviewer." + K + "发布规则; 周五; 热修复",
    "api_version": "Decision: the public API is versioned in the URL path (/v2/...), never by header." + K + "接口版本; URL 路径; 公共接口",
    "py311": "Decision: all services move to Python 3.11 by end of Q3; 3.8 images are no longer built." + K + "Python 版本; 升级; 镜像",
    "grafana_pw": "Fact: the Grafana admin password is stored in the ops vault under grafana/admin, not in the repo." + K + "密码存放; Grafana; 保险库",
    "ollama_port": "Fact: the local Ollama server listens on 127.0.0.1:11434 and serves qwen2.5:7b for summaries." + K + "本地模型; Ollama; 端口",
    "cn_wifi": "事实：办公室访客 Wi-Fi 每周一自动更换密码，新密码贴在前台。" + K + "访客网络; 密码更换; 前台",
    "cn_invoice": "决定：发票统一在每月二十五号之前提交，逾期的下个月再报销。" + K + "发票; 报销; 截止日期",
    "cn_oncall": "事实：值班表在飞书多维表格里维护，每周日晚上交接。" + K + "值班; 交接; 飞书表格",
    "cn_log_rotate": "踩坑：日志目录把磁盘写满导致服务挂掉。修复：给 logrotate 配置按天轮转、保留七天并压缩。" + K + "日志轮转; 磁盘满; logrotate",
    "mixed_es": "Pitfall: Elasticsearch 查询返回 'circuit_breaking_exception' when aggregating a year of logs. Fix: aggregate per month and raise indices.breaker.request.limit to 60%." + K + "熔断; Elasticsearch; 聚合",
    "mixed_kafka": "Fact: Kafka topic orders.v2 has 12 partitions; consumer group billing 消费延迟 alerts fire above 10k messages." + K + "消费延迟; Kafka; 分区",
    "webpack_hash": "Decision: production bundles use contenthash file names so browsers cache them for a year." + K + "缓存; 打包; 文件名哈希",
    "jwt_clock": "Pitfall: login failed with 'jwt issued at future' on one server. Cause: its clock drifted 40 s. Fix: enable chrony time sync." + K + "时钟漂移; JWT; 时间同步",
    "ssh_perm": "Pitfall: ssh ignored the key with 'UNPROTECTED PRIVATE KEY FILE'. Fix: chmod 600 ~/.ssh/id_ed25519." + K + "私钥权限; SSH; chmod",
    "pip_ssl": "Pitfall: pip on the build box failed with 'externally-managed-environment' (PEP 668). Fix: install into a venv; never pass --break-system-packages." + K + "虚拟环境; pip; 系统包",
    "mac_brew": "Fact: Homebrew on the M2 laptops lives in /opt/homebrew, so scripts must not hard-code /usr/local/bin." + K + "Homebrew; 路径; 苹果电脑",
    "gpu_cuda": "Pitfall: torch.cuda.is_available() returned False after the driver upgrade. Cause: CUDA 12.4 wheels need driver 550 or newer. Fix: install the cu121 wheels until the driver is updated." + K + "显卡驱动; CUDA; PyTorch",
    "stripe_webhook": "Pitfall: Stripe webhooks failed signature verification because the body was parsed as JSON before verifying. Fix: verify against the raw request body." + K + "签名验证; Stripe; 回调",
    "oauth_redirect": "Pitfall: Google sign-in failed with redirect_uri_mismatch on the staging domain. Fix: register https://staging.example.org/auth/callback in the OAuth client." + K + "回调地址; OAuth; 预发环境",
}

# query -> the key of the memory a person expects first
HELD_OUT: list[tuple[str, str]] = [
    ("ERR_PNPM_OUTDATED_LOCKFILE", "pnpm_lock"),
    ("E11000 duplicate key", "mongo_dup"),
    ("port 3000 already in use", "eaddrinuse"),
    ("which python package manager does the user prefer", "uv_pref"),
    ("too many clients already postgres", "pg_conn"),
    ("pod OOMKilled exit code 137", "k8s_oom"),
    ("git line endings on windows", "git_crlf"),
    ("exec format error docker image", "docker_m1"),
    ("部署前要做什么", "cn_deploy"),
    ("迁移脚本锁表", "cn_db_migrate"),
    ("代码评审用什么语言", "cn_review"),
    ("照片备份保留多久", "cn_backup"),
    ("Gemini 429 限流", "mixed_gemini"),
    ("wx.uploadFile url not in domain list", "mixed_wechat"),
    ("unable to get local issuer certificate", "ssl_cert"),
    ("async tests skipped pytest", "pytest_async"),
    ("ERESOLVE unable to resolve dependency tree", "npm_eresolve"),
    ("E0502", "rust_borrow"),
    ("assignment to entry in nil map", "go_nil_map"),
    ("Java heap space gradle", "java_heap"),
    ("413 Request Entity Too Large", "nginx_413"),
    ("cron job runs at the wrong time zone", "cron_tz"),
    ("S3 AccessDenied after enabling encryption", "s3_403"),
    ("terraform state lock stuck", "tf_lock"),
    ("sqlite database is locked", "sqlite_locked"),
    ("发布可以在周五吗", "release_fri"),
    ("ollama 端口", "ollama_port"),
    ("访客 Wi-Fi 密码", "cn_wifi"),
    ("circuit_breaking_exception", "mixed_es"),
    ("jwt issued at future", "jwt_clock"),
]

DEV: list[tuple[str, str]] = [
    ("pnpm lockfile out of date in CI", "pnpm_lock"),
    ("uv or pip", "uv_pref"),
    ("core.autocrlf", "git_crlf"),
    ("TypeScript strict mode", "ts_strict"),
    ("redis session TTL", "redis_ttl"),
    ("飞书机器人消息太大", "feishu_bot"),
    ("CORS No Access-Control-Allow-Origin", "cors"),
    ("编辑器偏好", "vim_pref"),
    ("API versioning header or path", "api_version"),
    ("Grafana admin password", "grafana_pw"),
    ("发票什么时候提交", "cn_invoice"),
    ("值班交接", "cn_oncall"),
    ("磁盘被日志写满", "cn_log_rotate"),
    ("Kafka orders.v2 partitions", "mixed_kafka"),
    ("UNPROTECTED PRIVATE KEY FILE", "ssh_perm"),
    ("externally-managed-environment", "pip_ssl"),
    ("/opt/homebrew", "mac_brew"),
    ("torch.cuda.is_available False", "gpu_cuda"),
    ("stripe webhook signature", "stripe_webhook"),
    ("redirect_uri_mismatch", "oauth_redirect"),
]

UNRELATED: list[str] = [
    "best sourdough hydration ratio",
    "how tall is mount kilimanjaro",
    "推荐一部科幻电影",
    "chess opening for beginners",
    "watering schedule for tomato plants",
    "周末去哪里爬山",
    "ERR_BLUETOOTH_PAIRING_TIMEOUT",
    "translate good morning into french",
]

_TOOLS = ["Docker", "nginx", "Postgres", "Redis", "Kafka", "Terraform", "GitHub Actions", "Kubernetes",
          "pytest", "webpack", "Vite", "FastAPI", "Django", "Celery", "systemd", "Prometheus"]
_EN = [
    "Fact: {t} runs on the shared staging host and its config lives in infra/{s}/.",
    "Decision: upgrades of {t} are done by the platform team in the Tuesday maintenance window.",
    "Pitfall: {t} logs filled the disk on the build runner. Fix: cap the log size of {t} to 100 MB.",
    "Preference: the user wants {t} settings explained with a short example before changing them.",
    "Fact: the {t} dashboard is linked from the team wiki page '{t} runbook'.",
    "Decision: {t} versions are pinned in one file and bumped by Renovate every Monday.",
]
_ZH = [
    "事实：{t} 的配置由运维组统一管理，修改需要提工单。",
    "决定：{t} 的告警统一发到值班群，不再发邮件。",
    "踩坑：{t} 升级后默认配置变了，导致预发环境启动失败。修复：升级前对比默认配置。",
    "偏好：用户希望 {t} 相关的回答先给结论再给步骤。",
]


def filler() -> dict[str, str]:
    """Neighbours: every template with every tool (16 × 10 = 160), plus numbered notes."""
    out: dict[str, str] = {}
    for i, (tpl, tool) in enumerate(itertools.product(_EN + _ZH, _TOOLS)):
        out[f"filler_{i}"] = tpl.format(t=tool, s=tool.lower().replace(" ", "-")) + K + f"{tool}; 配置; 运维"
    projects = ["billing", "search", "mobile", "reports", "auth", "ingest", "chat", "maps"]
    for i, (p, n) in enumerate(itertools.product(projects, range(1, 11))):
        out[f"note_{i}"] = (f"Fact: the {p} project's sprint {n} goal was tracked in ticket {p.upper()}-{100 + n}; "
                            f"owner rotation #{n}.") + K + f"{p}; 冲刺; 工单"
    return out


def corpus() -> dict[str, str]:
    return {**TARGETS, **filler()}
