import { Layer } from "effect"
import { areaHttp } from "../Area.ts"
import { CredentialsApi, ReposApi } from "@hostplane/api/git/GitApi"
import { GitHandlers } from "./GitHandlers.ts"
import { gitSmartHttp } from "./GitSmartHttp.ts"

export const GitAreaHttp = areaHttp({
  name: "git",
  groups: [ReposApi, CredentialsApi],
  handlers: Layer.merge(GitHandlers, gitSmartHttp),
  routes: [
    "GET /v1/orgs/{orgSlug}/projects/{projectName}/repos",
    "POST /v1/orgs/{orgSlug}/projects/{projectName}/repos",
    "GET /v1/orgs/{orgSlug}/projects/{projectName}/repos/{repoName}",
    "PATCH /v1/orgs/{orgSlug}/projects/{projectName}/repos/{repoName}",
    "DELETE /v1/orgs/{orgSlug}/projects/{projectName}/repos/{repoName}",
    "GET /v1/orgs/{orgSlug}/projects/{projectName}/repos/{repoName}/ref-updates",
    "GET /v1/orgs/{orgSlug}/projects/{projectName}/repos/{repoName}/refs",
    "GET /v1/orgs/{orgSlug}/projects/{projectName}/repos/{repoName}/tree",
    "GET /v1/orgs/{orgSlug}/projects/{projectName}/repos/{repoName}/blob",
    "GET /v1/orgs/{orgSlug}/projects/{projectName}/repos/{repoName}/commits",
    "GET /v1/me/ssh-keys",
    "POST /v1/me/ssh-keys",
    "DELETE /v1/me/ssh-keys/{keyId}",
    "GET /v1/me/tokens",
    "POST /v1/me/tokens",
    "DELETE /v1/me/tokens/{tokenId}"
  ]
})
