import { withRules } from "../auth/Rules.ts"
import { inviteRules } from "@hostplane/core/orgs/InviteRules"
import { orgRules } from "@hostplane/core/orgs/OrgRules"
import { memberRules } from "@hostplane/core/orgs/MemberRules"
import { Errors, Kernel, Orgs } from "@hostplane/core"
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../auth/Authentication.ts"
import { apiErrors } from "../errors/ApiError.ts"
import { OrgRef } from "../projects/ProjectRef.ts"

const items = <S extends Schema.Top>(item: S) => Schema.Struct({ items: Schema.Array(item) })
const access = apiErrors(Errors.NotFound, Errors.Forbidden)
const describe = (description: string) => OpenApi.annotations({ description })

/** Spec 4.2: organizations and their notifications. */
export class OrgsApi extends withRules(
  HttpApiGroup.make("orgs")
    .add(
      HttpApiEndpoint.get("list", "/orgs", { success: items(Orgs.OrgMembership) }).annotate(
        OpenApi.Summary,
        "List my organizations"
      ),
      HttpApiEndpoint.post("create", "/orgs", {
        payload: Orgs.CreateOrgInput,
        success: Orgs.Org.pipe(HttpApiSchema.status(201)),
        error: apiErrors(Errors.SlugTaken)
      }).annotate(OpenApi.Summary, "Create an organization"),
      HttpApiEndpoint.patch("rename", "/orgs/:orgSlug", {
        params: OrgRef,
        payload: Orgs.RenameOrgInput,
        success: Orgs.OrgMembership,
        error: access
      }).annotate(OpenApi.Summary, "Rename an organization"),
      HttpApiEndpoint.delete("remove", "/orgs/:orgSlug", {
        params: OrgRef,
        payload: Orgs.DeleteOrgInput,
        success: HttpApiSchema.NoContent,
        error: apiErrors(
          Errors.NotFound,
          Errors.Forbidden,
          Errors.BadRequest,
          Errors.PersonalOrg,
          Errors.OrgNotEmpty,
          Errors.ActiveSubscription
        )
      }).annotate(OpenApi.Summary, "Delete an organization"),
      HttpApiEndpoint.get("notifications", "/orgs/:orgSlug/notifications", {
        params: OrgRef,
        query: Kernel.PageQuery,
        success: Orgs.NotificationPage,
        error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.BadRequest)
      })
        .annotate(OpenApi.Summary, "List an organization's notifications")
        .annotateMerge(
          describe(
            [
              "Limit, backup and restore notices, newest first. Query `limit` (1..200, default 50) and",
              "`cursor` (the `nextCursor` of the previous page; null on the last page). A cursor this list did not hand",
              "out is 400. `sentAt` set means an email went out."
            ].join(" ")
          )
        )
    )
    .middleware(Authentication)
    .annotateMerge(OpenApi.annotations({ title: "Organizations", description: "Organizations (spec 4.2)." })),
  orgRules
) {}

const member = { ...OrgRef, userId: Kernel.UserId }

/** Spec 4.2: members of an organization. */
export class MembersApi extends withRules(
  HttpApiGroup.make("members")
    .add(
      HttpApiEndpoint.get("list", "/orgs/:orgSlug/members", {
        params: OrgRef,
        success: items(Orgs.Member),
        error: access
      }).annotate(OpenApi.Summary, "List members"),
      HttpApiEndpoint.post("add", "/orgs/:orgSlug/members", {
        params: OrgRef,
        payload: Orgs.AddMemberInput,
        success: Orgs.Member.pipe(HttpApiSchema.status(201)),
        error: apiErrors(
          Errors.NotFound,
          Errors.Forbidden,
          Errors.PersonalOrg,
          Errors.UserNotFound,
          Errors.AlreadyMember
        )
      }).annotate(OpenApi.Summary, "Add an existing user as a member"),
      HttpApiEndpoint.put("setRole", "/orgs/:orgSlug/members/:userId", {
        params: member,
        payload: Orgs.SetRoleInput,
        success: Orgs.Member,
        error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.LastAdmin)
      }).annotate(OpenApi.Summary, "Change a member's role"),
      HttpApiEndpoint.delete("remove", "/orgs/:orgSlug/members/:userId", {
        params: member,
        success: HttpApiSchema.NoContent,
        error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.LastAdmin)
      }).annotate(OpenApi.Summary, "Remove a member, or leave")
    )
    .middleware(Authentication)
    .annotateMerge(OpenApi.annotations({ title: "Members", description: "Organization members (spec 4.2)." })),
  memberRules
) {}

/** Spec 4.2: invitations, managed by admins, previewed and accepted by token. */
export class InvitesApi extends withRules(
  HttpApiGroup.make("invites")
    .add(
      HttpApiEndpoint.get("list", "/orgs/:orgSlug/invites", {
        params: OrgRef,
        success: items(Orgs.Invite),
        error: access
      })
        .annotate(OpenApi.Summary, "List pending and expired invites")
        .middleware(Authentication),
      HttpApiEndpoint.post("create", "/orgs/:orgSlug/invites", {
        params: OrgRef,
        payload: Orgs.CreateInviteInput,
        success: [Orgs.Invite.pipe(HttpApiSchema.status(201)), Orgs.Invite],
        error: apiErrors(
          Errors.NotFound,
          Errors.Forbidden,
          Errors.PersonalOrg,
          Errors.AlreadyMember,
          Errors.TooManyInvites
        )
      })
        .annotate(OpenApi.Summary, "Invite someone by email")
        .middleware(Authentication),
      HttpApiEndpoint.delete("revoke", "/orgs/:orgSlug/invites/:inviteId", {
        params: { ...OrgRef, inviteId: Kernel.InviteId },
        success: HttpApiSchema.NoContent,
        error: access
      })
        .annotate(OpenApi.Summary, "Revoke an invite")
        .middleware(Authentication),
      HttpApiEndpoint.get("view", "/invites/:token", {
        params: { token: Schema.String },
        success: Orgs.InviteView,
        error: apiErrors(Errors.NotFound)
      }).annotate(OpenApi.Summary, "Preview an invite by its token"),
      HttpApiEndpoint.post("accept", "/invites/:token/accept", {
        params: { token: Schema.String },
        success: Orgs.AcceptedInvite,
        error: apiErrors(
          Errors.NotFound,
          Errors.PersonalOrg,
          Errors.InviteUsed,
          Errors.InviteRevoked,
          Errors.InviteExpired
        )
      })
        .annotate(OpenApi.Summary, "Accept an invite")
        .middleware(Authentication)
    )
    .annotateMerge(OpenApi.annotations({ title: "Invites", description: "Invitations (spec 4.2 and part 3)." })),
  inviteRules
) {}
