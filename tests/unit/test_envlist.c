/* Which environment variables a recording may hold (src/format/envlist.c):
 * a table of real secret-bearing names and values, and of the
 * performance-relevant ones that must stay. */
#include <string.h>

#include "format/format.h"
#include "t.h"

/* Command lines: secret-looking values replaced, the rest kept. */
static void cmdline_scrub(void)
{
	static const struct {
		const char *argv[6], *want;
	} tab[] = {
		{ { "python", "train.py", "--epochs", "3", NULL }, "python train.py --epochs 3" },
		{ { "sh", "-c", "sleep 1", "--api-key=SECRET", NULL }, "sh -c sleep 1 --api-key=[redacted]" },
		{ { "job", "password=hunter2", "--lr=0.1", NULL }, "job password=[redacted] --lr=0.1" },
		{ { "job", "--token", "tok1", "--batch", "8", NULL }, "job --token [redacted] --batch 8" },
		{ { "job", "--hf-token", "--verbose", NULL }, "job --hf-token --verbose" },
		{ { "env", "HF_TOKEN=hf_abc", "WANDB_API_KEY=k1", "python", NULL },
		  "env HF_TOKEN=[redacted] WANDB_API_KEY=[redacted] python" },
		{ { "job", "--data=https://user:pw@host/d?x=1", NULL }, "job --data=https://[redacted]@host/d?x=1" },
		{ { "job", "s3://b/k?X-Amz-Signature=abc&X-Amz-Date=1", NULL },
		  "job s3://b/k?X-Amz-Signature=[redacted]&X-Amz-Date=1" },
		{ { "job", "https://h/p?sv=1&sig=xyz", NULL }, "job https://h/p?sv=1&sig=[redacted]" },
		{ { "python", "-c", "run(api_key='k2', n=3)", NULL }, "python -c run(api_key='[redacted]', n=3)" },
		{ { "job", "--secret=", "user@host", "https://h/a@b", NULL }, "job --secret= user@host https://h/a@b" },
		{ { "job", "--Password", "p w", NULL }, "job --Password [redacted]" },
		{ { "sh", "-c", "run --token t5 --n 3; x --key  k6", NULL }, "sh -c run --token [redacted] --n 3; x --key  [redacted]" },
		{ { "sh", "-c", "run --token --verbose a-b", NULL }, "sh -c run --token --verbose a-b" },
	};
	char out[256];

	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		size_t n = gw_argv_scrubbed((char *const *)tab[i].argv, out, sizeof(out));

		CHECK(!strcmp(out, tab[i].want) && n == strlen(out), "'%s', want '%s'", out, tab[i].want);
	}
	/* /proc/PID/cmdline's form: NUL-separated; cut short where out ends */
	static const char raw[] = "job\0--api-key\0k3\0x=1";
	size_t n = gw_cmdline_scrubbed(raw, sizeof(raw) - 1, out, sizeof(out));
	CHECK(!strcmp(out, "job --api-key [redacted] x=1") && n == strlen(out), "cmdline: '%s'", out);
	n = gw_cmdline_scrubbed(raw, sizeof(raw) - 1, out, 8);
	CHECK(!strcmp(out, "job --a") && n == strlen("job --api-key [redacted] x=1"), "cut short: '%s' (%zu)", out, n);
}

int main(void)
{
	static const struct {
		const char *name, *value;
		int keep;
	} tab[] = {
		/* never allowlisted: cloud keys, tokens, passwords, URLs */
		{ "AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", 0 },
		{ "AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE", 0 },
		{ "AWS_SESSION_TOKEN", "FwoGZXIvYXdzEXAMPLE", 0 },
		{ "GOOGLE_APPLICATION_CREDENTIALS", "/home/u/.config/gcloud/key.json", 0 },
		{ "HF_TOKEN", "hf_abcdefghijklmnop", 0 },
		{ "HUGGING_FACE_HUB_TOKEN", "hf_abcdefghijklmnop", 0 },
		{ "WANDB_API_KEY", "0123456789abcdef0123456789abcdef01234567", 0 },
		{ "OPENAI_API_KEY", "sk-proj-abc", 0 },
		{ "GITHUB_TOKEN", "ghp_abc", 0 },
		{ "AZURE_OPENAI_API_KEY", "abc", 0 },
		{ "AZURE_STORAGE_KEY", "abc==", 0 },
		{ "PGPASSWORD", "pw", 0 },
		{ "MYSQL_PWD", "pw", 0 },
		{ "DB_PASSWD", "pw", 0 },
		{ "SMTP_PASS", "pw", 0 },
		{ "APP_SECRET", "s", 0 },
		{ "DOCKER_CREDENTIALS", "c", 0 },
		{ "DATABASE_URL", "postgres://u:pw@h/db", 0 },
		{ "http_proxy", "http://user:pw@proxy:3128", 0 },
		{ "HTTPS_PROXY", "http://user:pw@proxy:3128", 0 },
		/* under the NCCL_ prefix: names that may carry a secret are dropped */
		{ "NCCL_PASS", "pw", 0 },
		{ "NCCL_IB_PASSWORD", "pw", 0 },
		{ "NCCL_AUTH_TOKEN", "t", 0 },
		{ "NCCL_NET_PLUGIN_CONFIG", "{\"endpoint\":\"x\",\"key\":\"k\"}", 0 },
		{ "NCCL_COLLNET_URL", "https://h/x", 0 },
		/* an allowlisted name whose value holds a credential is dropped */
		{ "NCCL_SOCKET_IFNAME", "https://u:pw@h/", 0 },
		{ "NCCL_DEBUG_FILE", "https://tok@h/x", 0 },
		{ "NCCL_TOPO_FILE", "s3://bucket/topo.xml?X-Amz-Signature=abc", 0 },
		{ "NCCL_TOPO_FILE", "https://h/topo.xml?token=abc", 0 },
		/* performance-relevant: kept */
		{ "NCCL_DEBUG", "INFO", 1 },
		{ "NCCL_SOCKET_IFNAME", "eth0", 1 },
		{ "NCCL_IB_HCA", "mlx5_0,mlx5_1", 1 },
		{ "NCCL_NET_PLUGIN", "aws-ofi", 1 },
		{ "NCCL_TOPO_FILE", "/etc/nccl/topo.xml", 1 },
		{ "CUDA_VISIBLE_DEVICES", "0,1", 1 },
		{ "CUDA_LAUNCH_BLOCKING", "1", 1 },
		{ "CUBLAS_WORKSPACE_CONFIG", ":4096:8", 1 },
		{ "PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", 1 },
		{ "OMP_NUM_THREADS", "8", 1 },
		{ "RANK", "0", 1 },
		/* not allowlisted at all */
		{ "HOME", "/root", 0 },
		{ "PATH", "/usr/bin", 0 },
		{ "CUDA_LAUNCH_BLOCKINGX", "1", 0 },
	};

	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		CHECK(gw_env_keep(tab[i].name, tab[i].value) == tab[i].keep, "%s=%s: %s",
		      tab[i].name, tab[i].value, tab[i].keep ? "dropped, want kept" : "kept, want dropped");
	CHECK(gw_env_value_secret("ftp://a:b@h") && gw_env_value_secret("x https://t@h/p y"),
	      "a credential in a URL anywhere in the value");
	CHECK(!gw_env_value_secret("https://h/p@x") && !gw_env_value_secret("user@host"),
	      "an @ in a path, or without a URL, is not a credential");
	cmdline_scrub();
	T_DONE();
}
