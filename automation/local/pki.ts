/**
 * The local control plane's certificates, made with the openssl CLI (Node has no X.509 writer):
 * a cluster CA (it also signs kubelet client certificates, as kube-controller-manager's csrsigning
 * does in a kubeadm cluster), the API server's serving certificate for 127.0.0.1, an admin client
 * certificate (system:masters) and the service-account key pair. Made once; kept in the data directory.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface ClusterPki {
  readonly dir: string;
  readonly caCert: string;
  readonly caKey: string;
  readonly apiserverCert: string;
  readonly apiserverKey: string;
  readonly adminCert: string;
  readonly adminKey: string;
  readonly serviceAccountKey: string;
  readonly serviceAccountPub: string;
}

function openssl(args: string[], cwd: string): void {
  execFileSync("openssl", args, { cwd, stdio: ["ignore", "ignore", "pipe"] });
}

/** Signs a new key's certificate with the CA; `ext` is an openssl extension section body. */
function issue(dir: string, name: string, subject: string, ext: string): void {
  writeFileSync(join(dir, `${name}.ext`), `[ext]\n${ext}\n`);
  openssl(["req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", subject], dir);
  openssl(
    [
      "x509",
      "-req",
      "-in",
      `${name}.csr`,
      "-CA",
      "ca.crt",
      "-CAkey",
      "ca.key",
      "-CAcreateserial",
      "-days",
      "3650",
      "-out",
      `${name}.crt`,
      "-extfile",
      `${name}.ext`,
      "-extensions",
      "ext",
    ],
    dir,
  );
}

export function ensurePki(dir: string): ClusterPki {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const pki: ClusterPki = {
    dir,
    caCert: join(dir, "ca.crt"),
    caKey: join(dir, "ca.key"),
    apiserverCert: join(dir, "apiserver.crt"),
    apiserverKey: join(dir, "apiserver.key"),
    adminCert: join(dir, "admin.crt"),
    adminKey: join(dir, "admin.key"),
    serviceAccountKey: join(dir, "sa.key"),
    serviceAccountPub: join(dir, "sa.pub"),
  };
  if (existsSync(pki.serviceAccountPub)) return pki;
  openssl(
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      "ca.key",
      "-out",
      "ca.crt",
      "-days",
      "3650",
      "-subj",
      "/CN=nodefleet-local-ca",
      "-addext",
      "basicConstraints=critical,CA:TRUE",
      "-addext",
      "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
    ],
    dir,
  );
  issue(
    dir,
    "apiserver",
    "/CN=kube-apiserver",
    "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc",
  );
  issue(
    dir,
    "admin",
    "/O=system:masters/CN=nodefleet-admin",
    "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth",
  );
  openssl(["genrsa", "-out", "sa.key", "2048"], dir);
  openssl(["rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub"], dir);
  return pki;
}
