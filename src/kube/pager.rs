//! LISTs read page by page, as client-go's pager reads them (kubernetes
//! `staging/src/k8s.io/client-go/tools/pager/pager.go`, `ListPager.List`): `limit` objects a
//! page, the next page asked with the `continue` token the last one gave, until none is given.
//! A token the server no longer honours (410 with reason `Expired`: apimachinery
//! `pkg/api/errors` `NewResourceExpired`, written by apiserver `pkg/storage/etcd3` when the
//! list's revision was compacted) starts the list again as one unpaged LIST, what the pager's
//! `FullListIfExpired` does; the pages read before are dropped, never kept twice.

use ::kube::api::ListParams;
use ::kube::core::{ErrorResponse, Request};
use serde::Deserialize;
use zeroize::Zeroizing;

use super::{EsoCluster, KubeError, Op};

/// Objects a page: client-go's `defaultPageSize`, and kubectl's `--chunk-size`.
pub const PAGE_SIZE: u32 = 500;

/// Where a LIST reads and how.
pub(super) struct ListAt {
    /// The collection's URL path (`/apis/<group>/<version>/namespaces/<ns>/<plural>`).
    pub path: String,
    /// A label selector, if any.
    pub labels: Option<String>,
    /// Ask for `PartialObjectMetadataList`: the objects' metadata only.
    pub metadata: bool,
    /// The resource with its group, for errors (`externalsecrets.external-secrets.io`).
    pub resource: String,
    /// The namespace; `None` across namespaces.
    pub namespace: Option<String>,
}

/// A whole list: every item and how many requests it took.
pub(super) struct Paged<T> {
    pub items: Vec<T>,
    pub pages: usize,
}

/// The list metadata of a page: only the token matters here.
#[derive(Deserialize, Default)]
pub(super) struct ListMeta {
    #[serde(default, rename = "continue")]
    pub continue_token: Option<String>,
}

impl EsoCluster {
    /// Every object of the LIST `at`, each page's text read by `page` into its items and its
    /// `continue` token (the text is zeroized after: a page of Secrets holds values). `None` when
    /// the server does not serve the path (404).
    pub(super) async fn list_pages<T>(
        &self,
        at: &ListAt,
        page: impl Fn(&str) -> Result<(Vec<T>, Option<String>), String>,
    ) -> Result<Option<Paged<T>>, KubeError> {
        let mut out = Paged {
            items: Vec::new(),
            pages: 0,
        };
        let mut token: Option<String> = None;
        let mut limit = Some(PAGE_SIZE);
        loop {
            let lp = ListParams {
                limit,
                continue_token: token.clone(),
                label_selector: at.labels.clone(),
                ..ListParams::default()
            };
            let op = || Op {
                verb: "list",
                resource: at.resource.clone(),
                namespace: at.namespace.as_deref(),
                name: at.labels.as_deref().unwrap_or(""),
            };
            let built = if at.metadata {
                Request::new(&at.path).list_metadata(&lp)
            } else {
                Request::new(&at.path).list(&lp)
            };
            let request = built.map_err(|e| self.decode_error(&op(), e.to_string()))?;
            out.pages += 1;
            let text = match self.client.request_text(request).await {
                Ok(text) => Zeroizing::new(text),
                Err(::kube::Error::Api(ErrorResponse { code: 404, .. })) => return Ok(None),
                Err(::kube::Error::Api(ErrorResponse {
                    code: 410, reason, ..
                })) if reason == "Expired" && token.is_some() => {
                    tracing::debug!(path = %at.path, "continue token expired: listing again in one request");
                    out.items.clear();
                    token = None;
                    limit = None;
                    continue;
                }
                Err(e) => return Err(self.error(e, op())),
            };
            let (items, next) = page(&text).map_err(|detail| self.decode_error(&op(), detail))?;
            out.items.extend(items);
            match next.filter(|t| !t.is_empty()) {
                Some(next) if limit.is_some() => token = Some(next),
                _ => return Ok(Some(out)),
            }
        }
    }
}

/// A page whose items are plain JSON (kinds whose values are not secret).
pub(super) fn json_page(text: &str) -> Result<(Vec<serde_json::Value>, Option<String>), String> {
    #[derive(Deserialize)]
    struct Page {
        #[serde(default)]
        metadata: ListMeta,
        #[serde(default)]
        items: Option<Vec<serde_json::Value>>,
    }
    let page: Page = serde_json::from_str(text).map_err(|e| {
        format!(
            "not a list ({:?} error at line {} column {})",
            e.classify(),
            e.line(),
            e.column()
        )
    })?;
    Ok((page.items.unwrap_or_default(), page.metadata.continue_token))
}
