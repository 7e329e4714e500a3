/**
 * The cluster's PKI, made with openssl: one CA, the apiserver's serving certificate, a client
 * certificate per component (the CN/O pairs the apiserver's RBAC bootstrap roles expect), and
 * the service-account signing key. ECDSA P-256 throughout: fast to generate, accepted by every
 * component.
 */

export interface ClientCertificate {
  certPath: string;
  keyPath: string;
}

export interface ClusterPki {
  caCertPath: string;
  caKeyPath: string;
  servingCertPath: string;
  servingKeyPath: string;
  serviceAccountKeyPath: string;
  serviceAccountPublicKeyPath: string;
  clients: Record<ClientName, ClientCertificate>;
}

/** Who talks to the apiserver, and as which user and group. */
export const clientSubjects = {
  admin: "/O=system:masters/CN=edgeroll-admin",
  "kube-controller-manager": "/CN=system:kube-controller-manager",
  "kube-scheduler": "/CN=system:kube-scheduler",
  // kwok writes node and pod status for every node, like many kubelets at once.
  kwok: "/O=system:masters/CN=kwok",
} as const;

export type ClientName = keyof typeof clientSubjects;

const curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

export async function writePki(dir: string): Promise<ClusterPki> {
  await Deno.mkdir(dir, { recursive: true });
  const path = (name: string) => `${dir}/${name}`;
  const pki: ClusterPki = {
    caCertPath: path("ca.crt"),
    caKeyPath: path("ca.key"),
    servingCertPath: path("apiserver.crt"),
    servingKeyPath: path("apiserver.key"),
    serviceAccountKeyPath: path("service-account.key"),
    serviceAccountPublicKeyPath: path("service-account.pub"),
    clients: Object.fromEntries(
      Object.keys(clientSubjects).map((name) => [
        name,
        { certPath: path(`${name}.crt`), keyPath: path(`${name}.key`) },
      ]),
    ) as Record<ClientName, ClientCertificate>,
  };

  await openssl(
    "req",
    "-x509",
    ...curve,
    "-keyout",
    pki.caKeyPath,
    "-out",
    pki.caCertPath,
    "-days",
    "7",
    "-subj",
    "/CN=edgeroll-test-cluster-ca",
  );
  const signed = (subject: string, certPath: string, keyPath: string, ...extensions: string[]) =>
    signWithCa(pki, subject, certPath, keyPath, ...extensions);
  await signed(
    "/CN=kube-apiserver",
    pki.servingCertPath,
    pki.servingKeyPath,
    "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default.svc",
    "extendedKeyUsage=serverAuth",
  );
  await Promise.all(
    (Object.keys(clientSubjects) as ClientName[]).map((name) =>
      signed(
        clientSubjects[name],
        pki.clients[name].certPath,
        pki.clients[name].keyPath,
        "extendedKeyUsage=clientAuth",
      )
    ),
  );
  await openssl(
    "genpkey",
    "-algorithm",
    "EC",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-out",
    pki.serviceAccountKeyPath,
  );
  await openssl(
    "pkey",
    "-in",
    pki.serviceAccountKeyPath,
    "-pubout",
    "-out",
    pki.serviceAccountPublicKeyPath,
  );
  return pki;
}

/** A certificate for `subject`, signed by the cluster's CA, with a fresh P-256 key. */
function signWithCa(
  pki: Pick<ClusterPki, "caCertPath" | "caKeyPath">,
  subject: string,
  certPath: string,
  keyPath: string,
  ...extensions: string[]
): Promise<void> {
  return openssl(
    "req",
    "-x509",
    ...curve,
    "-CA",
    pki.caCertPath,
    "-CAkey",
    pki.caKeyPath,
    "-keyout",
    keyPath,
    "-out",
    certPath,
    "-days",
    "7",
    "-subj",
    subject,
    "-addext",
    "basicConstraints=critical,CA:FALSE",
    ...extensions.flatMap((e) => ["-addext", e]),
  );
}

/**
 * A client certificate for `subject` (`/O=group/CN=user`), signed by the cluster's CA, written as
 * `<dir>/<stem>.crt` and `.key`.
 */
export async function writeClientCertificate(
  pki: Pick<ClusterPki, "caCertPath" | "caKeyPath">,
  dir: string,
  stem: string,
  subject: string,
): Promise<ClientCertificate> {
  const certificate = { certPath: `${dir}/${stem}.crt`, keyPath: `${dir}/${stem}.key` };
  await signWithCa(
    pki,
    subject,
    certificate.certPath,
    certificate.keyPath,
    "extendedKeyUsage=clientAuth",
  );
  return certificate;
}

async function openssl(...args: string[]): Promise<void> {
  const { code, stderr } = await new Deno.Command("openssl", {
    args,
    stdout: "null",
    stderr: "piped",
  })
    .output();
  if (code !== 0) {
    throw new Error(`openssl ${args[0]} failed: ${new TextDecoder().decode(stderr).trim()}`);
  }
}
