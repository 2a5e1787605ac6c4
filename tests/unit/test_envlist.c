/* Which environment variables a recording may hold (src/format/envlist.c):
 * a table of real secret-bearing names and values, and of the
 * performance-relevant ones that must stay. */
#include <string.h>

#include "format/format.h"
#include "t.h"

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
	T_DONE();
}
