package deploy

import (
	"regexp"
	"strings"
	"testing"
	"text/template"

	"github.com/attnx/attnx/serve"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// adapterConfig is prometheus-adapter's configuration file, the part of
// its format (docs/config.md of kubernetes-sigs/prometheus-adapter) that
// rules for custom metrics use: decoded strictly, a misspelt field fails.
type adapterConfig struct {
	Rules []struct {
		SeriesQuery   string `json:"seriesQuery"`
		SeriesFilters []struct {
			Is    string `json:"is,omitempty"`
			IsNot string `json:"isNot,omitempty"`
		} `json:"seriesFilters,omitempty"`
		Resources struct {
			Template  string `json:"template,omitempty"`
			Overrides map[string]struct {
				Group    string `json:"group,omitempty"`
				Resource string `json:"resource"`
			} `json:"overrides,omitempty"`
			Namespaced *bool `json:"namespaced,omitempty"`
		} `json:"resources"`
		Name struct {
			Matches string `json:"matches"`
			As      string `json:"as,omitempty"`
		} `json:"name"`
		MetricsQuery string `json:"metricsQuery"`
	} `json:"rules"`
}

// TestAutoscaling checks hpa.yaml, adapter-config.yaml and pdb.yaml
// together: the HPA scales the Deployment on a per-pod metric that the
// server exports as a gauge (serve.MetricRowsInFlight), which the
// adapter's rule finds in Prometheus by the pods' namespace and pod
// labels and names as the HPA asks for, with a query the adapter's
// template engine renders; its target lies below a batch and a full
// queue; the PodDisruptionBudget covers the Deployment's pods and leaves
// one pod free to drain at the HPA's minimum; a rolling update never has
// fewer ready pods than wanted.
func TestAutoscaling(t *testing.T) {
	var dep appsv1.Deployment
	var hpa autoscalingv2.HorizontalPodAutoscaler
	var cm corev1.ConfigMap
	var pdb policyv1.PodDisruptionBudget
	decodeStrict(t, "deployment.yaml", "apps/v1", "Deployment", &dep)
	decodeStrict(t, "hpa.yaml", "autoscaling/v2", "HorizontalPodAutoscaler", &hpa)
	decodeStrict(t, "adapter-config.yaml", "v1", "ConfigMap", &cm)
	decodeStrict(t, "pdb.yaml", "policy/v1", "PodDisruptionBudget", &pdb)

	var pods *autoscalingv2.PodsMetricSource
	for _, m := range hpa.Spec.Metrics {
		if m.Type == autoscalingv2.PodsMetricSourceType {
			pods = m.Pods
		}
	}
	if pods == nil || pods.Metric.Name != serve.MetricRowsInFlight || pods.Target.Type != autoscalingv2.AverageValueMetricType || pods.Target.AverageValue == nil {
		t.Fatalf("HPA metrics %+v: want a Pods metric %s with an AverageValue target", hpa.Spec.Metrics, serve.MetricRowsInFlight)
	}
	// Scale out before a pod's batch is full, long before its queue is.
	target := pods.Target.AverageValue.Value()
	rows := int64(serve.DefaultMaxBatchRows)
	if v := flagValue(dep.Spec.Template.Spec.Containers[0].Args, "--max-batch-rows"); v != "" {
		q := resource.MustParse(v)
		rows = q.Value()
	}
	if target < 1 || target > rows || target >= serve.DefaultMaxQueue {
		t.Errorf("target %d rows in flight per pod: want 1 to a batch (%d rows), under a full queue (%d)", target, rows, serve.DefaultMaxQueue)
	}

	var cfg adapterConfig
	if err := yaml.UnmarshalStrict([]byte(cm.Data["config.yaml"]), &cfg); err != nil {
		t.Fatalf("adapter-config.yaml's config.yaml: %v", err)
	}
	found := false
	for _, r := range cfg.Rules {
		if !strings.Contains(r.SeriesQuery, serve.MetricRowsInFlight) {
			continue
		}
		found = true
		for _, l := range []string{`namespace!=""`, `pod!=""`} {
			if !strings.Contains(r.SeriesQuery, l) {
				t.Errorf("seriesQuery %q lacks %s: the series must carry the pod's namespace and name", r.SeriesQuery, l)
			}
		}
		for label, res := range map[string]string{"namespace": "namespace", "pod": "pod"} {
			if o, ok := r.Resources.Overrides[label]; !ok || o.Resource != res {
				t.Errorf("resources.overrides[%s] = %+v: want resource %s", label, o, res)
			}
		}
		re, err := regexp.Compile(r.Name.Matches)
		if err != nil || !re.MatchString(serve.MetricRowsInFlight) {
			t.Errorf("name.matches %q (%v) does not match %s", r.Name.Matches, err, serve.MetricRowsInFlight)
		} else if got := re.ReplaceAllString(serve.MetricRowsInFlight, r.Name.As); got != pods.Metric.Name {
			t.Errorf("the adapter names the metric %q, the HPA asks for %q", got, pods.Metric.Name)
		}
		// The adapter renders metricsQuery as a Go template with << >>.
		tmpl, err := template.New("q").Delims("<<", ">>").Parse(r.MetricsQuery)
		if err != nil {
			t.Fatalf("metricsQuery %q: %v", r.MetricsQuery, err)
		}
		var q strings.Builder
		if err := tmpl.Execute(&q, map[string]string{"Series": serve.MetricRowsInFlight, "LabelMatchers": `namespace="default",pod=~"attnx-.*"`, "GroupBy": "pod"}); err != nil {
			t.Fatalf("metricsQuery %q: %v", r.MetricsQuery, err)
		}
		want := serve.MetricRowsInFlight + `{namespace="default",pod=~"attnx-.*"}`
		if !strings.Contains(q.String(), want) || !strings.HasSuffix(q.String(), "by (pod)") {
			t.Errorf("metricsQuery renders as %q: want the series with the label matchers, grouped by pod", q.String())
		}
	}
	if !found {
		t.Errorf("no adapter rule finds %s", serve.MetricRowsInFlight)
	}

	// The budget covers the Deployment's pods and lets one of the HPA's
	// minimum be drained.
	if pdb.Spec.Selector == nil || !subset(pdb.Spec.Selector.MatchLabels, dep.Spec.Template.Labels) || len(pdb.Spec.Selector.MatchLabels) == 0 {
		t.Errorf("PodDisruptionBudget selector %v does not select the pods %v", pdb.Spec.Selector, dep.Spec.Template.Labels)
	}
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() < 1 || int32(pdb.Spec.MinAvailable.IntValue()) >= *hpa.Spec.MinReplicas {
		t.Errorf("minAvailable %v with at least %d replicas: want 1 or more, and a pod free to drain", pdb.Spec.MinAvailable, *hpa.Spec.MinReplicas)
	}
	ru := dep.Spec.Strategy.RollingUpdate
	if dep.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || ru == nil || ru.MaxUnavailable == nil || ru.MaxUnavailable.IntValue() != 0 || ru.MaxSurge == nil || ru.MaxSurge.IntValue() < 1 {
		t.Errorf("strategy %+v: want a rolling update with maxUnavailable 0 and a surge", dep.Spec.Strategy)
	}
}
