import { execFileSync } from "node:child_process"
import { randomUUID, sign as signWith } from "node:crypto"
import * as Fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"

/** Fields a test may set on a message before it is signed (or after, to forge it). */
export type SnsFields = Record<string, string | undefined>

export interface FakeSns {
  readonly topicArn: string
  /** The folder to pass as `SERVICE_MAIL_SNS_CERTS`. */
  readonly certsDir: string
  /** `https://sns.<region>.amazonaws.com/SimpleNotificationService-<id>.pem`, whose file is in `certsDir`. */
  readonly certUrl: string
  /** A base URL to pass as `SERVICE_MAIL_SNS_CONFIRM_VIA`; every GET it receives is in `confirmations`. */
  readonly confirmVia: string
  readonly confirmations: Array<string>
  /** Signs `fields` as SNS does: the canonical fields of its `Type`, SHA1 (version 1) or SHA256 (version 2). */
  readonly sign: (fields: SnsFields, version?: "1" | "2") => SnsFields
  /** A signed `Notification` carrying `message` (JSON-encoded when not a string). */
  readonly notification: (message: unknown, overrides?: SnsFields, version?: "1" | "2") => SnsFields
  /** A signed `SubscriptionConfirmation` with its `SubscribeURL`. */
  readonly subscriptionConfirmation: (overrides?: SnsFields) => SnsFields
  readonly close: () => Promise<void>
}

const notificationFields = ["Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"]
const confirmationFields = ["Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"]

/**
 * Amazon SNS as a test sees it: a self-signed RSA certificate (made by `openssl`) in a folder named as its URL's last
 * segment, messages signed exactly as SNS signs them, and a loopback server standing in for the `SubscribeURL` host.
 */
export const startFakeSns = async (options: { readonly region?: string; readonly topicArn?: string } = {}) => {
  const region = options.region ?? "us-east-1"
  const topicArn = options.topicArn ?? `arn:aws:sns:${region}:123456789012:hostplane-mail-${randomUUID().slice(0, 8)}`
  const certsDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "hostplane-sns-"))
  const certName = `SimpleNotificationService-${randomUUID().replace(/-/g, "")}.pem`
  const keyPath = Path.join(certsDir, "key.private")
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      keyPath,
      "-out",
      Path.join(certsDir, certName),
      "-days",
      "2",
      "-subj",
      "/CN=sns.amazonaws.com"
    ],
    { stdio: "ignore" }
  )
  const privateKey = Fs.readFileSync(keyPath, "utf8")
  Fs.rmSync(keyPath)
  const confirmations: Array<string> = []
  const server = Http.createServer((request, response) => {
    confirmations.push(request.url ?? "")
    response.writeHead(200, { "content-type": "text/xml" })
    response.end("<ConfirmSubscriptionResponse/>")
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const certUrl = `https://sns.${region}.amazonaws.com/${certName}`

  const sign = (fields: SnsFields, version: "1" | "2" = "1"): SnsFields => {
    const names = fields.Type === "Notification" ? notificationFields : confirmationFields
    const canonical = names
      .filter((name) => fields[name] !== undefined)
      .map((name) => `${name}\n${fields[name]}\n`)
      .join("")
    const signature = signWith(version === "1" ? "sha1" : "sha256", Buffer.from(canonical, "utf8"), privateKey)
    return {
      ...fields,
      SignatureVersion: version,
      Signature: signature.toString("base64"),
      SigningCertURL: fields.SigningCertURL ?? certUrl
    }
  }

  const base = (type: string): SnsFields => ({
    Type: type,
    MessageId: randomUUID(),
    TopicArn: topicArn,
    Timestamp: new Date().toISOString()
  })

  const fake: FakeSns = {
    topicArn,
    certsDir,
    certUrl,
    confirmVia: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    confirmations,
    sign,
    notification: (message, overrides = {}, version = "1") =>
      sign(
        {
          ...base("Notification"),
          Message: typeof message === "string" ? message : JSON.stringify(message),
          UnsubscribeURL: `https://sns.${region}.amazonaws.com/?Action=Unsubscribe`,
          ...overrides
        },
        version
      ),
    subscriptionConfirmation: (overrides = {}) => {
      const token = randomUUID().replace(/-/g, "")
      return sign({
        ...base("SubscriptionConfirmation"),
        Message: `You have chosen to subscribe to the topic ${topicArn}.`,
        Token: token,
        SubscribeURL:
          `https://sns.${region}.amazonaws.com/?Action=ConfirmSubscription&TopicArn=${encodeURIComponent(topicArn)}` +
          `&Token=${token}`,
        ...overrides
      })
    },
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
      Fs.rmSync(certsDir, { recursive: true, force: true })
    }
  }
  return fake
}
