import { withRules } from "../auth/Rules.ts"
import { repoRules } from "@hostplane/core/git/RepoRules"
import { Errors, Git } from "@hostplane/core"
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../auth/Authentication.ts"
import { apiErrors } from "../errors/ApiError.ts"
import { ProjectRef } from "../projects/ProjectRef.ts"
import { secretSuccess } from "../server/NoStore.ts"

const describe = (description: string) => OpenApi.annotations({ description })

const RepoRef = {
  ...ProjectRef,
  repoName: Schema.String.annotate({ description: "The repository's name (`^[A-Za-z0-9._-]{1,100}$`)." })
}

const repos = "/orgs/:orgSlug/projects/:projectName/repos"
const repo = `${repos}/:repoName`

const read = apiErrors(Errors.NotFound, Errors.Forbidden)
const storage = [Errors.GitUnavailable, Errors.GitUnreachable] as const

const browseQuery = {
  ref: Schema.optionalKey(
    Schema.String.annotate({ description: "A branch, tag or commit id; the default branch when empty." })
  ),
  path: Schema.optionalKey(Schema.String.annotate({ description: "From the root; empty means the root." }))
}

/** Spec 4.12: a project's repositories, browsing and ref history. */
export class ReposApi extends withRules(
  HttpApiGroup.make("repos")
    .add(
      HttpApiEndpoint.get("list", repos, { params: ProjectRef, success: Git.RepoList, error: read })
        .annotate(OpenApi.Summary, "List repositories")
        .annotateMerge(describe("The project's repositories by name.")),
      HttpApiEndpoint.post("create", repos, {
        params: ProjectRef,
        payload: Git.CreateRepoInput,
        success: Git.Repo.pipe(HttpApiSchema.status(201)),
        error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.BadRequest, Errors.OpInFlight, Errors.RepoExists)
      })
        .annotate(OpenApi.Summary, "Create a repository")
        .annotateMerge(
          describe(
            [
              "`{ name, visibility?, defaultBranch? }` (defaults `private`, `main`). Only the record is",
              "made: the bare repository is created on first use, stored by the repo's id. Names are unique per project",
              "ignoring case (409 `repo_exists`); a deleted repo's name is free at once. `cloneUrl` is the smart HTTP URL",
              "(`<public url>/git/<org>/<project>/<repo>.git`, Basic auth with an access token as the password), `sshUrl`",
              "the SSH one. Audit `repo.create`."
            ].join(" ")
          )
        ),
      HttpApiEndpoint.get("get", repo, { params: RepoRef, success: Git.Repo, error: read })
        .annotate(OpenApi.Summary, "Get a repository")
        .annotateMerge(describe("The repository's record.")),
      HttpApiEndpoint.patch("update", repo, {
        params: RepoRef,
        payload: Git.PatchRepoInput,
        success: HttpApiSchema.NoContent,
        error: apiErrors(
          Errors.NotFound,
          Errors.Forbidden,
          Errors.BadRequest,
          Errors.OpInFlight,
          Errors.RepoExists,
          ...storage
        )
      })
        .annotate(OpenApi.Summary, "Update a repository")
        .annotateMerge(
          describe(
            [
              "`{ name?, visibility?, defaultBranch? }`; `defaultBranch` must be a valid branch name (it need not",
              "exist yet) and moves the repository's HEAD within the same write: when the storage cannot move it (503),",
              "nothing changes. A rename never moves data, so a running push goes on.",
              "Audit `repo.update`."
            ].join(" ")
          )
        ),
      HttpApiEndpoint.delete("remove", repo, {
        params: RepoRef,
        success: HttpApiSchema.NoContent,
        error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.OpInFlight)
      })
        .annotate(OpenApi.Summary, "Delete a repository")
        .annotateMerge(
          describe(
            "Soft delete: the repo is gone from every URL at once; its disk copy is removed after `SERVICE_GIT_RETENTION`. Audit `repo.delete`."
          )
        ),
      HttpApiEndpoint.get("refUpdates", `${repo}/ref-updates`, {
        params: RepoRef,
        success: Git.RefUpdateList,
        error: read
      })
        .annotate(OpenApi.Summary, "Ref update history")
        .annotateMerge(
          describe(
            "The latest 200 ref updates of every push (HTTP and SSH), newest first: `{ ref, old, new, userId, at }`, `old` null on a creation and `new` null on a deletion. A commit named here is never pruned: `git fetch origin <old>` recovers a commit lost to a force push."
          )
        ),
      HttpApiEndpoint.get("refs", `${repo}/refs`, {
        params: RepoRef,
        success: Git.RepoRefs,
        error: apiErrors(Errors.NotFound, Errors.Forbidden, ...storage)
      })
        .annotate(OpenApi.Summary, "Branches and tags")
        .annotateMerge(
          describe(
            "A public repo needs a membership too. Short names; an annotated tag's `commit` is the tagged commit."
          )
        ),
      HttpApiEndpoint.get("tree", `${repo}/tree`, {
        params: RepoRef,
        query: browseQuery,
        success: Git.RepoTree,
        error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.NoRef, Errors.NoPath, ...storage)
      })
        .annotate(OpenApi.Summary, "List a directory")
        .annotateMerge(
          describe(
            "At most 1000 entries, then `truncated: true`. `mode` is git's (`100644`, `100755`, `040000`, `120000`, `160000`); `size` is null for trees and submodules. An unknown ref is 404 `no_ref`; a missing path, a file, or a path escaping the tree is 404 `no_path`."
          )
        ),
      HttpApiEndpoint.get("blob", `${repo}/blob`, {
        params: RepoRef,
        query: browseQuery,
        success: Git.RepoBlob,
        error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.NoRef, Errors.NoPath, ...storage)
      })
        .annotate(OpenApi.Summary, "Read a file")
        .annotateMerge(
          describe(
            "Above 1 MiB the content is never read (`tooLarge`, `content: null`); a NUL byte in the first 8,000 bytes makes it `binary` (`content: null`). `size` is always filled."
          )
        ),
      HttpApiEndpoint.get("commits", `${repo}/commits`, {
        params: RepoRef,
        query: {
          ref: browseQuery.ref,
          limit: Schema.optionalKey(
            Schema.FiniteFromString.check(Schema.isInt(), Schema.isGreaterThanOrEqualTo(1)).annotate({
              description: "1..200, default 200; larger is clamped to 200."
            })
          )
        },
        success: Git.CommitList,
        error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.NoRef, Errors.BadRequest, ...storage)
      })
        .annotate(OpenApi.Summary, "List commits")
        .annotateMerge(describe("Newest first from `ref`: `{ sha, message, author, parents }`."))
    )
    .middleware(Authentication)
    .annotateMerge(OpenApi.annotations({ title: "Repositories", description: "Git repositories (spec 4.12)." })),
  repoRules
) {}

/** Spec 4.12: the caller's SSH keys and personal access tokens. */
export class CredentialsApi extends HttpApiGroup.make("credentials")
  .add(
    HttpApiEndpoint.get("listKeys", "/me/ssh-keys", { success: Git.SshKeyList })
      .annotate(OpenApi.Summary, "List SSH keys")
      .annotateMerge(describe("The caller's SSH keys.")),
    HttpApiEndpoint.post("addKey", "/me/ssh-keys", {
      payload: Git.AddSshKeyInput,
      success: Git.SshKey.pipe(HttpApiSchema.status(201)),
      error: apiErrors(Errors.BadRequest, Errors.SshKeyExists, Errors.GitUnavailable)
    })
      .annotate(OpenApi.Summary, "Add an SSH key")
      .annotateMerge(
        describe(
          "`{ publicKey, title? }`: one OpenSSH public key line without options. Types `ed25519`, `ecdsa-sha2-nistp256`, `ecdsa-sha2-nistp384`, `ecdsa-sha2-nistp521`, `rsa` (2048 bits or more); DSA and anything else is 400. `fingerprint` is `SHA256:...` as `ssh-keygen -lf` prints it, unique across all users (409 `ssh_key_exists`). `title` defaults to the key's comment."
        )
      ),
    HttpApiEndpoint.delete("removeKey", "/me/ssh-keys/:keyId", {
      params: { keyId: Schema.String },
      success: HttpApiSchema.NoContent,
      error: apiErrors(Errors.NotFound)
    })
      .annotate(OpenApi.Summary, "Delete an SSH key")
      .annotateMerge(describe("Takes effect at once: the next SSH sign-in with the key fails.")),
    HttpApiEndpoint.get("listTokens", "/me/tokens", { success: Git.AccessTokenList })
      .annotate(OpenApi.Summary, "List access tokens")
      .annotateMerge(describe("The caller's tokens without the token itself: `lastUsedAt`, `expiresAt`, `revokedAt`.")),
    HttpApiEndpoint.post("createToken", "/me/tokens", {
      payload: Git.CreateAccessTokenInput,
      success: secretSuccess(Git.AccessTokenCreated.pipe(HttpApiSchema.status(201))),
      error: apiErrors(Errors.BadRequest)
    })
      .annotate(OpenApi.Summary, "Create an access token")
      .annotateMerge(
        describe(
          "`{ name (1..100), expiresAt? }`: `expiresAt` is an RFC 3339 time with its offset or `Z`, answered in UTC; one without an offset, or in the past, is 400. The token (`svc_pat_` and 32 random bytes) is in this answer only; only its SHA-256 is stored. It is the password of git over HTTPS (the Basic username is ignored) and an API bearer token (`Authorization: Bearer svc_pat_...`) with its user's roles. `lastUsedAt` updates at most once a minute."
        )
      ),
    HttpApiEndpoint.delete("revokeToken", "/me/tokens/:tokenId", {
      params: { tokenId: Schema.String },
      success: HttpApiSchema.NoContent,
      error: apiErrors(Errors.NotFound)
    })
      .annotate(OpenApi.Summary, "Revoke an access token")
      .annotateMerge(describe("Sets `revokedAt`; refused from then on. Revoking again is 204; an unknown token 404."))
  )
  .middleware(Authentication)
  .annotateMerge(
    OpenApi.annotations({ title: "SSH keys and access tokens", description: "Credentials for git (spec 4.12)." })
  ) {}
