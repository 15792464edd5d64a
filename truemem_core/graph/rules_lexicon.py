"""Word lists the graph rules recognise (closed sets: an unknown word means "not sure").

Tools are spelled as their makers spell them; a mention in any case ("postgres 16",
"k8s") becomes the canonical name ("PostgreSQL 16", "Kubernetes").
"""

from __future__ import annotations

from truemem_core.language.text import words

# canonical spelling -> the folded ways people write it
_TOOLS = {
    "PostgreSQL": "postgresql postgres", "MySQL": "mysql", "MariaDB": "mariadb",
    "SQLite": "sqlite", "MongoDB": "mongodb mongo", "Redis": "redis", "Memcached": "memcached",
    "Valkey": "valkey", "Elasticsearch": "elasticsearch", "OpenSearch": "opensearch",
    "Cassandra": "cassandra", "DynamoDB": "dynamodb", "ClickHouse": "clickhouse",
    "Kafka": "kafka", "RabbitMQ": "rabbitmq", "Nginx": "nginx", "Apache": "apache httpd",
    "Caddy": "caddy", "Traefik": "traefik", "HAProxy": "haproxy", "Docker": "docker",
    "Kubernetes": "kubernetes k8s", "Terraform": "terraform", "Ansible": "ansible",
    "Jenkins": "jenkins", "GitHub Actions": "github_actions", "GitHub": "github",
    "GitLab": "gitlab", "Git": "git", "Grafana": "grafana", "Prometheus": "prometheus",
    "Datadog": "datadog", "Sentry": "sentry", "AWS": "aws", "Azure": "azure", "GCP": "gcp",
    "Google Cloud": "google_cloud", "Heroku": "heroku", "Vercel": "vercel",
    "Netlify": "netlify", "Cloudflare": "cloudflare", "Hetzner": "hetzner",
    "DigitalOcean": "digitalocean", "Python": "python", "Rust": "rust", "Java": "java",
    "JavaScript": "javascript", "TypeScript": "typescript", "Ruby": "ruby", "PHP": "php",
    "Kotlin": "kotlin", "Scala": "scala", "Elixir": "elixir", "Haskell": "haskell",
    "Golang": "golang", "Django": "django", "Flask": "flask", "FastAPI": "fastapi",
    "Rails": "rails", "React": "react", "Vue": "vue vue.js", "Angular": "angular",
    "Svelte": "svelte", "Node.js": "node.js nodejs", "Linux": "linux",
    "Ubuntu": "ubuntu", "Debian": "debian", "Fedora": "fedora", "CentOS": "centos",
    "Windows": "windows", "macOS": "macos", "VS Code": "vs_code vscode", "Vim": "vim",
    "Neovim": "neovim", "Emacs": "emacs", "PyCharm": "pycharm", "IntelliJ": "intellij",
    "Slack": "slack", "Jira": "jira", "Notion": "notion", "Figma": "figma",
    "Celery": "celery", "Dramatiq": "dramatiq", "SQLAlchemy": "sqlalchemy",
    "pgvector": "pgvector", "Certbot": "certbot", "Airflow": "airflow", "Spark": "spark",
    "Snowflake": "snowflake", "BigQuery": "bigquery", "Tableau": "tableau", "Excel": "excel",
    "Photoshop": "photoshop", "Blender": "blender", "Unity": "unity", "Varnish": "varnish",
    "Consul": "consul", "Vault": "vault", "Nomad": "nomad", "Helm": "helm",
    "Podman": "podman", "OpenAI": "openai", "PyTorch": "pytorch", "TensorFlow": "tensorflow",
}
TOOLS: dict[str, str] = {
    spelling.replace("_", " "): name for name, spellings in _TOOLS.items()
    for spelling in spellings.split()
}

# A capitalised phrase ending in one of these names an organisation.
ORG_SUFFIXES = words(
    "inc inc. ltd ltd. llc gmbh corp corp. corporation co. company plc ag sa labs university "
    "college bank hospital institute foundation agency group studios systems technologies"
)
# Relatives and acquaintances a fact can name: "Has a sister named Maria".
PEOPLE = words(
    "wife husband partner girlfriend boyfriend fiance fiancee spouse sister brother son "
    "daughter mother father mom mum dad grandmother grandfather aunt uncle cousin niece nephew "
    "friend colleague coworker boss manager mentor roommate neighbour neighbor"
)
# Tools whose name is also a common word: a tool only when written capitalised.
COMMON_WORDS = words(
    "rust spark unity vault excel slack notion helm consul nomad snowflake apache java python "
    "ruby rails react angular flask windows caddy celery sentry vue blender spark"
)
# Capitalised words that start a sentence but name nothing.
NOT_NAMES = words(
    "the a an this that these those it its he she they we i my our his her their there here "
    "then when after before because since today yesterday tomorrow last next every each all "
    "some most no not user users monday tuesday wednesday thursday friday saturday sunday "
    "january february march april may june july august september october november december"
)
# What a hypothetical, planned, negated or asked clause says: nothing current.
NOT_CURRENT = (
    r"\b(?:not|no|never|no\s+longer|might|may|would|could|should|if|unless|maybe|perhaps|"
    r"plans?\s+to|planning|wants?\s+to|wishes|hopes?\s+to|considering|thinking\s+(?:of|about)|"
    r"will|going\s+to|used\s+to|formerly|previously|stopped|quit)\b|n't\b"
)
