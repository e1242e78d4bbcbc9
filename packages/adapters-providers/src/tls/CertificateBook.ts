import { Tls } from "@hostplane/core"
import { createPrivateKey, X509Certificate } from "node:crypto"
import { readFileSync } from "node:fs"
import { createSecureContext, type SecureContext } from "node:tls"

/** A certificate the edge serves: its chain and key as PEM, the names it covers and when it expires. */
export interface ServedCertificate {
  readonly names: ReadonlyArray<string>
  readonly expiresAt: string
  readonly context: SecureContext
}

const pemBlocks = (pem: string) => pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []

/**
 * Reads a PEM chain (leaf first) and its private key into what the listener serves: the leaf's DNS names (its
 * subjectAltName, else its common name) and expiry. Fails with a message naming what is wrong, never echoing the key.
 */
export const servedCertificate = (chainPem: string, keyPem: string): ServedCertificate => {
  const leafPem = pemBlocks(chainPem)[0]
  if (leafPem === undefined) throw new Error("no PEM certificate in the chain")
  const leaf = new X509Certificate(leafPem)
  let key
  try {
    key = createPrivateKey(keyPem)
  } catch {
    throw new Error("the private key is not a PEM private key")
  }
  if (!leaf.checkPrivateKey(key)) throw new Error("the private key does not match the certificate")
  const alt = (leaf.subjectAltName ?? "")
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry.startsWith("DNS:"))
    .map((entry) => entry.slice(4).toLowerCase())
  const common = /(?:^|\n)CN=([^\n]+)/.exec(leaf.subject)?.[1]?.toLowerCase()
  return {
    names: alt.length > 0 ? alt : common === undefined ? [] : [common],
    expiresAt: new Date(leaf.validTo).toISOString(),
    context: createSecureContext({ cert: chainPem, key: keyPem, minVersion: "TLSv1.2" })
  }
}

/** The static certificate with its PEM, which the listener's default context is made of. */
export interface StaticCertificate extends ServedCertificate {
  readonly chain: string
  readonly key: string
}

/** `SERVICE_TLS_CERT_FILE` and `SERVICE_TLS_KEY_FILE` read into a served certificate; the error names the files. */
export const readStaticCertificate = (certFile: string, keyFile: string): StaticCertificate => {
  const chain = readFileSync(certFile, "utf8")
  const key = readFileSync(keyFile, "utf8")
  try {
    return { ...servedCertificate(chain, key), chain, key }
  } catch (error) {
    throw new Error(
      `SERVICE_TLS_CERT_FILE ${certFile} with SERVICE_TLS_KEY_FILE ${keyFile}: ${(error as Error).message}`
    )
  }
}

/**
 * The certificates one edge holds, by name: the static one (for every name it covers, and for handshakes naming
 * none or an unknown name) and one per hostname issued by ACME, replaced and removed as the store changes, so the
 * listener picks up a new certificate at its next handshake without a restart.
 */
export class CertificateBook {
  private readonly issued = new Map<string, ServedCertificate>()
  readonly fallback: StaticCertificate | undefined
  constructor(fallback: StaticCertificate | undefined) {
    this.fallback = fallback
  }

  /** The context for an SNI name: the name's own certificate, else the static one when it covers the name. */
  contextFor(servername: string): SecureContext | undefined {
    const name = servername.toLowerCase().replace(/\.$/, "")
    const own = this.issued.get(name)
    if (own !== undefined) return own.context
    return this.fallback?.context
  }

  /** Whether a certificate for `host` is in hand: issued for it, or the static one naming it. */
  covers(host: string): boolean {
    return this.issued.has(host) || this.staticCovers(host)
  }

  staticCovers(host: string): boolean {
    return this.fallback !== undefined && this.fallback.names.some((pattern) => Tls.nameMatches(pattern, host))
  }

  set(name: string, certificate: ServedCertificate) {
    this.issued.set(name, certificate)
  }

  delete(name: string) {
    this.issued.delete(name)
  }

  names(): ReadonlyArray<string> {
    return [...this.issued.keys()]
  }
}
