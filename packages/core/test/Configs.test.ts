import { assert, describe, it } from "@effect/vitest"
import { configLayer, configLayerFromEnv, Git, Hostnames, Identity, Kernel, Mail, Orgs } from "@hostplane/core"
import { ConfigProvider, Duration, Effect, FileSystem, Layer } from "effect"

const read = Effect.gen(function* () {
  return {
    settings: yield* Kernel.Settings,
    identity: yield* Identity.IdentityConfig,
    hostnames: yield* Hostnames.HostnamesConfig,
    mail: yield* Mail.MailConfig,
    invites: yield* Orgs.InvitesConfig
  }
})

const fromEnv = (env: Record<string, string>, devAuthDefault = false) =>
  read.pipe(
    Effect.provide(
      configLayerFromEnv({ devAuthDefault }).pipe(
        Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(env))),
        // No catalog file is read here.
        Layer.provide(FileSystem.layerNoop({}))
      )
    )
  )

describe("per-area config", () => {
  it.effect("with no environment every area takes decisions.md's defaults", () =>
    Effect.gen(function* () {
      const all = yield* fromEnv({}, true)
      assert.deepStrictEqual(all.settings, {
        productName: "hostplane",
        publicUrl: "http://localhost:8080",
        appDomain: "apps.localhost",
        serviceDomains: ["apps.localhost"],
        siteUrl: "https://{host}/",
        // decisions.md part 3, written out here rather than read from the module under test.
        planLimits: {
          free: {
            projectLimit: 3,
            storageQuotaBytes: 1024 ** 3,
            mailHourlyCap: 50,
            mailKeepDays: 30,
            ai: { maxOutputTokens: 4096, maxInputTokens: 32768, requestsPerMinute: 20, dailySpendMicroCents: 100000000 }
          },
          pro: {
            projectLimit: 50,
            storageQuotaBytes: 100 * 1024 ** 3,
            mailHourlyCap: 1000,
            mailKeepDays: 365,
            ai: { maxOutputTokens: 0, maxInputTokens: 0, requestsPerMinute: 600, dailySpendMicroCents: 10000000000 }
          }
        }
      })
      assert.deepStrictEqual(all.identity.oauthRedirects, ["http://localhost:8080"])
      assert.isTrue(all.identity.devAuth)
      assert.strictEqual(Duration.toMillis(all.identity.sessionTtl), Duration.toMillis(Duration.days(30)))
      assert.deepStrictEqual(all.hostnames, {
        fallbackOrigin: "fallback.apps.localhost",
        dnsNameservers: ["ns1.hostplane.localhost", "ns2.hostplane.localhost"]
      })
      const { relayLease, ...mail } = all.mail
      assert.deepStrictEqual(mail, { mailDomain: "", mailFrom: "hostplane <no-reply@localhost>", topicArn: "" })
      assert.strictEqual(Duration.toMillis(relayLease), 30_000)
      assert.strictEqual(Duration.toMillis(all.invites.inviteTtl), Duration.toMillis(Duration.days(7)))
    })
  )

  it.effect(
    "SERVICE_SITE_URL names where a hostname is opened, else the standalone server's default for its edge",
    () =>
      Effect.gen(function* () {
        const set = yield* fromEnv({ SERVICE_SITE_URL: "https://{host}:8443/" })
        assert.strictEqual(set.settings.siteUrl, "https://{host}:8443/")
        const defaulted = yield* read.pipe(
          Effect.provide(
            configLayerFromEnv({ devAuthDefault: false, siteUrlDefault: "http://{host}:8081/" }).pipe(
              Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({}))),
              Layer.provide(FileSystem.layerNoop({}))
            )
          )
        )
        assert.strictEqual(defaulted.settings.siteUrl, "http://{host}:8081/")
      })
  )

  it.effect("each area reads its own SERVICE_* settings; defaults follow the shared ones", () =>
    Effect.gen(function* () {
      const all = yield* fromEnv({
        SERVICE_PUBLIC_URL: "https://console.example.com/",
        SERVICE_APP_DOMAIN: "Apps.Example.com",
        SERVICE_DOMAINS: "example.com, example.net",
        SERVICE_MAIL_DOMAIN: "Mail.Example.com",
        SERVICE_MAIL_TOPIC_ARN: " arn:aws:sns:us-east-1:123456789012:mail ",
        SERVICE_MAIL_RELAY_LEASE: "5 seconds",
        SERVICE_DNS_NAMESERVERS: "ns1.example.com,ns2.example.com",
        SERVICE_ENABLE_DEV_AUTH: "false",
        SERVICE_SESSION_TTL: "12 hours"
      })
      assert.strictEqual(all.settings.publicUrl, "https://console.example.com")
      assert.deepStrictEqual(all.settings.serviceDomains, ["apps.example.com", "example.com", "example.net"])
      assert.deepStrictEqual(all.identity.oauthRedirects, ["https://console.example.com"])
      assert.isFalse(all.identity.devAuth)
      assert.strictEqual(Duration.toMillis(all.identity.sessionTtl), Duration.toMillis(Duration.hours(12)))
      assert.strictEqual(all.hostnames.fallbackOrigin, "fallback.apps.example.com")
      assert.deepStrictEqual(all.hostnames.dnsNameservers, ["ns1.example.com", "ns2.example.com"])
      const { relayLease, ...mail } = all.mail
      assert.deepStrictEqual(mail, {
        mailDomain: "mail.example.com",
        mailFrom: "hostplane <no-reply@mail.example.com>",
        topicArn: "arn:aws:sns:us-east-1:123456789012:mail"
      })
      assert.strictEqual(Duration.toMillis(relayLease), 5_000)
    })
  )

  it.effect(
    "git: SERVICE_GIT_SSH_LISTEN (default 127.0.0.1:2222, [v6]:port, off) and SERVICE_GIT_RETENTION (default 7 days, any duration); sshUrl's host is the public URL's",
    () =>
      Effect.gen(function* () {
        const gitOf = (env: Record<string, string>) =>
          Effect.service(Git.GitConfig).pipe(
            Effect.provide(
              configLayerFromEnv({ devAuthDefault: false }).pipe(
                Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(env))),
                // No catalog file is read here.
                Layer.provide(FileSystem.layerNoop({}))
              )
            )
          )
        const defaults = yield* gitOf({})
        assert.deepStrictEqual(defaults.sshListen, { host: "127.0.0.1", port: 2222 })
        assert.deepStrictEqual([defaults.sshHost, defaults.sshPort], ["localhost", 2222])
        assert.strictEqual(Duration.toMillis(defaults.retention), Duration.toMillis(Duration.days(7)))
        const set = yield* gitOf({
          SERVICE_PUBLIC_URL: "https://git.example.com",
          SERVICE_GIT_SSH_LISTEN: "[::1]:2022",
          SERVICE_GIT_RETENTION: "2 hours"
        })
        assert.deepStrictEqual(set.sshListen, { host: "::1", port: 2022 })
        assert.deepStrictEqual([set.sshHost, set.sshPort], ["git.example.com", 2022])
        assert.strictEqual(Duration.toMillis(set.retention), Duration.toMillis(Duration.hours(2)))
        const days = yield* gitOf({ SERVICE_GIT_RETENTION: "7 days", SERVICE_GIT_SSH_LISTEN: "off" })
        assert.strictEqual(Duration.toMillis(days.retention), Duration.toMillis(Duration.days(7)))
        assert.isNull(days.sshListen)
        const bad = yield* Effect.exit(gitOf({ SERVICE_GIT_RETENTION: "soon" }))
        assert.isTrue(bad._tag === "Failure")
      })
  )

  it.effect("configLayer takes explicit values by area", () =>
    Effect.gen(function* () {
      const all = yield* read.pipe(
        Effect.provide(
          configLayer({ settings: { appDomain: "apps.test" }, hostnames: { fallbackOrigin: "edge.test" } })
        )
      )
      assert.strictEqual(all.settings.appDomain, "apps.test")
      assert.strictEqual(all.hostnames.fallbackOrigin, "edge.test")
      assert.isFalse(all.identity.devAuth)
    })
  )

  it.effect(
    "SERVICE_PLAN_LIMITS overrides part 3's numbers field by field; a misspelt plan or field, a fraction or a negative stops the start naming the setting",
    () =>
      Effect.gen(function* () {
        const { planLimits } = (yield* fromEnv({
          SERVICE_PLAN_LIMITS: '{"free":{"storageQuotaBytes":1048576,"mailHourlyCap":5,"ai":{"requestsPerMinute":2}}}'
        })).settings
        assert.strictEqual(planLimits.free.storageQuotaBytes, 1048576)
        assert.strictEqual(planLimits.free.mailHourlyCap, 5)
        assert.strictEqual(planLimits.free.ai.requestsPerMinute, 2)
        // What the override leaves out keeps part 3's number.
        assert.strictEqual(planLimits.free.projectLimit, 3)
        assert.strictEqual(planLimits.free.ai.maxOutputTokens, 4096)
        assert.strictEqual(planLimits.pro.mailHourlyCap, 1000)
        for (const bad of [
          '{"free":{"storageQuota":1}}',
          '{"team":{"projectLimit":1}}',
          '{"free":{"ai":{"tokens":1}}}',
          '{"free":{"projectLimit":-1}}',
          '{"free":{"projectLimit":1.5}}',
          '{"free":{"projectLimit":"3"}}',
          "[]",
          "{free:"
        ]) {
          const exit = yield* Effect.exit(fromEnv({ SERVICE_PLAN_LIMITS: bad }))
          assert.isTrue(exit._tag === "Failure", bad)
          assert.include(String(exit._tag === "Failure" ? exit.cause : ""), "SERVICE_PLAN_LIMITS", bad)
        }
      })
  )
})
