<?php
// php_cluster.php PLAN.json - the scenario workload with php-redis's
// RedisCluster, reads distributed to replicas (OPT_SLAVE_FAILOVER =
// FAILOVER_DISTRIBUTE_SLAVES). Summary (ok, errors by message) on stdout.
$plan = json_decode(file_get_contents($argv[1]), true);
$sum = ["lib" => "php-redis", "version" => phpversion("redis"), "ok" => 0, "errors" => []];
$seeds = array_map(fn($s) => $s[0] . ":" . $s[1], $plan["seeds"]);
// timeout 0.1 s: it also bounds php-redis's own redirect retries ("Timed out
// attempting to find data in the correct node"), which keeps the capture small.
$rc = new RedisCluster(NULL, $seeds, 0.1, 1.0);
$rc->setOption(RedisCluster::OPT_SLAVE_FAILOVER, RedisCluster::FAILOVER_DISTRIBUTE_SLAVES);
$deadline = microtime(true) + $plan["duration"];
$i = 0;
while (microtime(true) < $deadline && !file_exists($plan["stop"])) {
    [$x, $y] = $plan["pairs"][$i % count($plan["pairs"])];
    $f = $plan["fail"][$i % count($plan["fail"])];
    [$a, $b] = $plan["hot"][$i % count($plan["hot"])];
    $calls = [fn() => $rc->mset([$x => $i, $y => $i]), fn() => $rc->get($x),
              ($i % 2) ? fn() => $rc->get($f) : fn() => $rc->set($f, $i),
              fn() => $rc->mget([$a, $b]), fn() => $rc->set($a, $i)];
    foreach ($calls as $c) {
        try {
            $r = $c();
            if ($r === false && $rc->getLastError()) {
                $k = "false:" . substr($rc->getLastError(), 0, 40);
                $sum["errors"][$k] = ($sum["errors"][$k] ?? 0) + 1;
                $rc->clearLastError();
            } else {
                $sum["ok"]++;
            }
        } catch (Throwable $e) {
            $k = get_class($e) . ":" . substr($e->getMessage(), 0, 40);
            $sum["errors"][$k] = ($sum["errors"][$k] ?? 0) + 1;
        }
    }
    $i++;
    usleep((int)($plan["interval"] * 1e6));
}
$rc->close();
$sum["steps"] = $i;
echo json_encode($sum), "\n";
