import { Errors, Identity } from "@hostplane/core"
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../auth/Authentication.ts"
import { apiErrors } from "../errors/ApiError.ts"
import { secretSuccess } from "../server/NoStore.ts"

const Redirect = HttpApiSchema.Empty(302)

/** Spec 4.1: site config, the current user and the identity-provider sign-in. */
export class IdentityApi extends HttpApiGroup.make("identity")
  .add(
    HttpApiEndpoint.get("config", "/config", { success: Identity.SiteConfig }).annotate(
      OpenApi.Summary,
      "Read the site config"
    ),
    HttpApiEndpoint.get("me", "/me", { success: Identity.Me })
      .annotate(OpenApi.Summary, "Read the current user and their organizations")
      .middleware(Authentication),
    HttpApiEndpoint.get("idpStart", "/auth/idp/start", {
      query: { redirect: Schema.String },
      success: Redirect,
      error: apiErrors(Errors.BadRequest)
    })
      .annotate(OpenApi.Summary, "Start sign-in with the identity provider")
      .annotateMerge(
        OpenApi.annotations({
          description:
            "Browser navigation only. Sets the `hostplane_oauth` cookie (`__Host-hostplane_oauth` over https) that binds " +
            "the sign-in to this browser, then redirects (302) to the identity provider. `redirect` must start with an " +
            "entry of `SERVICE_OAUTH_REDIRECTS`, or be a native app's loopback address (RFC 8252: " +
            "`http://127.0.0.1:<any port>/...` or `http://[::1]:<any port>/...`); else 400."
        })
      ),
    HttpApiEndpoint.get("idpCallback", "/auth/idp/callback", {
      query: {
        state: Schema.String,
        code: Schema.optionalKey(Schema.String),
        error: Schema.optionalKey(Schema.String)
      },
      success: Redirect,
      error: apiErrors(Errors.BadRequest)
    })
      .annotate(OpenApi.Summary, "Finish sign-in with the identity provider")
      .annotateMerge(
        OpenApi.annotations({
          description:
            "Redirects (302) to the start's `redirect` with the session in the fragment, or `#error=<code>&message=<text>`. " +
            "A callback without the start's cookie, or with another sign-in's, is `#error=state_mismatch` (login CSRF) " +
            "and uses the state up. An unknown, used or expired `state` is 400."
        })
      )
  )
  .annotateMerge(OpenApi.annotations({ title: "Identity", description: "Sign-in and the current user (spec 4.1)." })) {}

/** Registered only when `SERVICE_ENABLE_DEV_AUTH` is on. */
export class DevAuthApi extends HttpApiGroup.make("devAuth")
  .add(
    HttpApiEndpoint.post("login", "/auth/dev/login", {
      payload: Identity.DevLoginInput,
      success: secretSuccess(Identity.Session)
    }).annotate(OpenApi.Summary, "Sign in locally (dev login)")
  )
  .annotateMerge(
    OpenApi.annotations({
      title: "Dev login",
      description: "Local-only sign-in; absent unless SERVICE_ENABLE_DEV_AUTH is on."
    })
  ) {}
