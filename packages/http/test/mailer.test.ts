import { MailNotificationsSns } from "@hostplane/adapters-providers"
import { Email, Kernel } from "@hostplane/core"
import { type FakeSns, type SnsFields, startFakeSns } from "@hostplane/testkit"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { type Suite, type TestServer, unique, useSuite } from "./support/TestServer.ts"

const mailDomain = "mail.example.test"

/** A FakeSns started before the suite's server, and the server pointed at its topic, folder and proxy. */
const withSns = () => {
  const holder = {} as { sns: FakeSns }
  const topicArn = `arn:aws:sns:us-east-1:123456789012:${unique("mail")}`
  beforeAll(async () => {
    holder.sns = await startFakeSns({ topicArn })
  })
  afterAll(() => holder.sns?.close())
  const notifications = () =>
    MailNotificationsSns.layer({ certsDir: holder.sns.certsDir, confirmVia: holder.sns.confirmVia })
  return { holder, settings: { mail: { mailDomain, topicArn } }, notifications }
}

const post = (suite: Suite, fields: SnsFields | string) =>
  suite.api.post("/v1/hooks/mailer", undefined, {
    raw: typeof fields === "string" ? fields : JSON.stringify(fields),
    headers: { "content-type": "text/plain; charset=UTF-8", "x-amz-sns-message-type": "Notification" }
  })

const logOf = (server: TestServer, projectId: Kernel.ProjectId) =>
  server.run(
    Effect.flatMap(Email.EmailStore, (store) =>
      store.listLog(projectId, { direction: undefined, after: undefined, limit: 200 })
    )
  )

/** Gives a project its address as the email grant does (the grant itself is tested with the email add-on). */
const giveAddress = (server: TestServer, projectId: Kernel.ProjectId, address: string, granted = true) =>
  server.run(Effect.flatMap(Email.EmailStore, (store) => store.saveAddress({ projectId, address, granted })))

const raw = ["From: Ann <ann@sender.example>", "To: x", "Subject: Hello", "", "Hi there, \u00e9t\u00e9.", ""].join(
  "\r\n"
)

const received = (
  recipients: ReadonlyArray<string>,
  encoding: "BASE64" | "UTF8" = "BASE64",
  messageId = unique("ses")
) => ({
  notificationType: "Received",
  mail: {
    messageId,
    source: "ann@sender.example",
    destination: recipients,
    commonHeaders: { from: ["Ann <ann@sender.example>"], subject: "Hello" }
  },
  receipt: {
    recipients,
    spfVerdict: { status: "PASS" },
    action: { type: "SNS", encoding, topicArn: "arn:aws:sns:us-east-1:123456789012:inbound" }
  },
  content: encoding === "BASE64" ? Buffer.from(raw, "utf8").toString("base64") : raw
})

describe.each(backends)("spec 4.8 mail webhook (%s)", (_name, stores) => {
  const { holder, settings, notifications } = withSns()
  const suite = useSuite(stores, settings, undefined, undefined, { providers: [notifications] })
  const sns = () => holder.sns

  const projectWithAddress = async (granted = true) => {
    const slug = await suite.newOrg()
    const project = await suite.newProject(slug)
    const address = `${project.name}.${slug}@${mailDomain}`
    await giveAddress(suite.server, project.id, address, granted)
    return { slug, project, address }
  }

  /** An `out` row as the relay writes it, sent with `messageId`. */
  const sentRow = async (projectId: Kernel.ProjectId, messageId: string) => {
    const id = Kernel.makeId("mail", unique("mail_out").replace("-", ""))
    await suite.server.run(
      Effect.flatMap(Email.EmailStore, (store) =>
        store.insertLog({
          id,
          projectId,
          direction: "out",
          from: "app@x",
          to: "someone@y",
          subject: "s",
          outcome: "sent",
          size: 10,
          spf: null,
          hasRaw: true,
          createdAt: new Date().toISOString(),
          providerMessageId: messageId,
          raw: new TextEncoder().encode("raw")
        })
      )
    )
    return id
  }

  it("a Received notification (signature version 1) becomes an in row with the raw message and the service's headers", async () => {
    const { project, address } = await projectWithAddress()
    const reply = await post(suite, sns().notification(received([address.toUpperCase(), "other@elsewhere.test"])))
    expect({ status: reply.status, body: reply.body }).toEqual({ status: 200, body: { received: true } })
    const rows = await logOf(suite.server, project.id)
    expect(rows).toHaveLength(1)
    const row = rows[0]!
    expect(row).toMatchObject({
      direction: "in",
      from: "Ann <ann@sender.example>",
      to: address,
      subject: "Hello",
      outcome: "received",
      size: Buffer.byteLength(raw, "utf8"),
      spf: "pass",
      hasRaw: true
    })
    const text = Buffer.from(row.raw!).toString("utf8")
    expect(text).toMatch(/^Received: from ann@sender\.example by [^\r\n]+ with SNS id [^\r\n]+; [^\r\n]+\r\n/)
    expect(text).toContain("\r\nAuthentication-Results: localhost; spf=pass smtp.mailfrom=ann@sender.example\r\n")
    // The message itself follows byte for byte.
    expect(text.endsWith(raw)).toBe(true)
  })

  it("signature version 2 (SHA256) and UTF-8 content are accepted too", async () => {
    const { project, address } = await projectWithAddress()
    const reply = await post(suite, sns().notification(received([address], "UTF8"), {}, "2"))
    expect(reply.status).toBe(200)
    const rows = await logOf(suite.server, project.id)
    expect(rows.map((row) => row.outcome)).toEqual(["received"])
    expect(Buffer.from(rows[0]!.raw!).toString("utf8").endsWith(raw)).toBe(true)
  })

  it("a replayed MessageId changes nothing", async () => {
    const { project, address } = await projectWithAddress()
    const message = sns().notification(received([address]))
    expect((await post(suite, message)).status).toBe(200)
    expect((await post(suite, message)).status).toBe(200)
    expect(await logOf(suite.server, project.id)).toHaveLength(1)
    // A replayed Bounce after a later Delivery does not undo it either.
    const messageId = unique("ses-out")
    const outId = await sentRow(project.id, messageId)
    const bounce = sns().notification({ notificationType: "Bounce", mail: { messageId }, bounce: {} })
    expect((await post(suite, bounce)).status).toBe(200)
    const delivery = sns().notification({ notificationType: "Delivery", mail: { messageId }, delivery: {} })
    expect((await post(suite, delivery)).status).toBe(200)
    expect((await post(suite, bounce)).status).toBe(200)
    const rows = await logOf(suite.server, project.id)
    expect(rows.find((row) => row.id === outId)?.outcome).toBe("delivered")
  })

  it("mail to a revoked address is recorded as refused, never kept or delivered", async () => {
    const { project, address } = await projectWithAddress(false)
    expect((await post(suite, sns().notification(received([address])))).status).toBe(200)
    const rows = await logOf(suite.server, project.id)
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({ direction: "in", outcome: "refused", hasRaw: false, raw: null })
  })

  it("Bounce, Complaint and Delivery set the outcome of the out row with that message id; unknown ids are 200", async () => {
    const { project } = await projectWithAddress()
    const cases = [
      ["Bounce", "bounced"],
      ["Complaint", "complained"],
      ["Delivery", "delivered"]
    ] as const
    for (const [type, outcome] of cases) {
      const messageId = unique("ses-out")
      const id = await sentRow(project.id, messageId)
      const reply = await post(suite, sns().notification({ notificationType: type, mail: { messageId } }))
      expect(reply.status).toBe(200)
      expect((await logOf(suite.server, project.id)).find((row) => row.id === id)?.outcome).toBe(outcome)
    }
    const unknownId = await post(suite, sns().notification({ notificationType: "Bounce", mail: { messageId: "nope" } }))
    const unknownType = await post(suite, sns().notification({ notificationType: "Open", mail: { messageId: "x" } }))
    const notJson = await post(suite, sns().notification("plain text, not an SES event"))
    const unsubscribe = await post(suite, sns().subscriptionConfirmation({ Type: "UnsubscribeConfirmation" }))
    for (const reply of [unknownId, unknownType, notJson, unsubscribe]) expect(reply.status).toBe(200)
  })

  it("a SubscriptionConfirmation is confirmed by a GET to its SubscribeURL (path and query kept)", async () => {
    const message = sns().subscriptionConfirmation()
    const reply = await post(suite, message)
    expect(reply.status).toBe(200)
    const url = new URL(message.SubscribeURL!)
    expect(sns().confirmations).toContain(`${url.pathname}${url.search}`)
  })

  it("a SubscribeURL off the SNS host is 403 and never requested", async () => {
    const before = sns().confirmations.length
    for (const SubscribeURL of [
      "https://evil.example/?Action=ConfirmSubscription",
      "http://sns.us-east-1.amazonaws.com/?Action=ConfirmSubscription",
      "https://sns.us-east-1.amazonaws.com.evil.example/?Action=ConfirmSubscription"
    ]) {
      const reply = await post(suite, sns().subscriptionConfirmation({ SubscribeURL }))
      expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 403, code: "forbidden" })
    }
    expect(sns().confirmations.length).toBe(before)
  })

  it("forged, unsigned, wrong-topic, wrong-host and unknown-certificate messages are 403 and change nothing", async () => {
    const { project, address } = await projectWithAddress()
    const good = sns().notification(received([address]))
    const forged = { ...good, Message: JSON.stringify(received([address], "UTF8")) }
    const wrongTopic = sns().notification(received([address]), {
      TopicArn: "arn:aws:sns:us-east-1:123456789012:someone-else"
    })
    const certName = Path.basename(new URL(sns().certUrl).pathname)
    const hosts = [
      `https://evil.example/${certName}`,
      `http://sns.us-east-1.amazonaws.com/${certName}`,
      `https://sns.us-east-1.amazonaws.com.evil.example/${certName}`,
      `https://sns.us-east-1.amazonaws.com:8443/${certName}`,
      `https://sns.us-east-1.amazonaws.com/${certName.replace(".pem", ".txt")}`
    ].map((SigningCertURL) => sns().notification(received([address]), { SigningCertURL }))
    // A certificate on the right host that the folder does not hold.
    const unknownCert = sns().notification(received([address]), {
      SigningCertURL: "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-unknown.pem"
    })
    const badVersion = { ...good, SignatureVersion: "3" }
    const unsigned = { ...good, Signature: "" }
    // A signed message with its signature fields removed is unauthenticated (403), not malformed (400).
    const without = (field: "Signature" | "SigningCertURL" | "SignatureVersion") =>
      Object.fromEntries(Object.entries(good).filter(([name]) => name !== field))
    const stripped = [without("Signature"), without("SigningCertURL"), without("SignatureVersion")]
    for (const message of [forged, wrongTopic, ...hosts, unknownCert, badVersion, unsigned, ...stripped]) {
      const reply = await post(suite, message)
      expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 403, code: "forbidden" })
    }
    expect(await logOf(suite.server, project.id)).toHaveLength(0)
    // A forged copy never recorded the MessageId: the genuine message still applies.
    expect((await post(suite, good)).status).toBe(200)
    expect(await logOf(suite.server, project.id)).toHaveLength(1)
  })

  it("a body that is not an SNS message is 400", async () => {
    for (const body of ["not json", "[]", '{"Type":"Notification"}']) {
      const reply = await post(suite, body)
      expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 400, code: "bad_request" })
    }
  })

  it("the certificate folder is read once per URL", async () => {
    const { project, address } = await projectWithAddress()
    // The first message read the certificate (whichever test of the file ran first); later ones need no file.
    expect((await post(suite, sns().notification(received([address])))).status).toBe(200)
    const certPath = Path.join(sns().certsDir, Path.basename(new URL(sns().certUrl).pathname))
    const pem = Fs.readFileSync(certPath, "utf8")
    Fs.rmSync(certPath)
    try {
      expect((await post(suite, sns().notification(received([address])))).status).toBe(200)
    } finally {
      Fs.writeFileSync(certPath, pem)
    }
    expect(await logOf(suite.server, project.id)).toHaveLength(2)
  })
})

describe.each(backends)("spec 4.8 mail webhook off (%s)", (_name, stores) => {
  const suite = useSuite(stores, { mail: { mailDomain } })

  it("without SERVICE_MAIL_TOPIC_ARN the webhook is 501 mail_webhook_off", async () => {
    const reply = await post(suite, "{}")
    expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 501, code: "mail_webhook_off" })
  })
})
